"""transpose reference: out = x.T, copied into C order.

Usage: python3 reference.py case.json INDIR OUTDIR
"""
import json
import os
import sys

import numpy as np


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    rows = int(case["sizes"]["rows"])
    cols = int(case["sizes"]["cols"])
    x = np.load(os.path.join(sys.argv[2], "x.npy"), mmap_mode="r")
    if x.shape != (rows, cols):
        sys.exit("transpose reference: x must have shape (%d, %d)" % (rows, cols))
    np.save(os.path.join(sys.argv[3], "out.npy"), np.ascontiguousarray(x.T))


if __name__ == "__main__":
    main()
