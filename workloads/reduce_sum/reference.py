"""reduce_sum reference: the float64 sum of x, rounded to float32.

Usage: python3 reference.py case.json INDIR OUTDIR
"""
import json
import os
import sys

import numpy as np

CHUNK = 1 << 22


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    n = int(case["sizes"]["n"])
    x = np.load(os.path.join(sys.argv[2], "x.npy"), mmap_mode="r")
    if x.shape != (n,):
        sys.exit("reduce_sum reference: x must have shape (%d,)" % n)
    total = 0.0
    for lo in range(0, n, CHUNK):
        total += float(np.sum(x[lo:lo + CHUNK], dtype=np.float64))
    np.save(os.path.join(sys.argv[3], "out.npy"), np.array([total], dtype=np.float32))


if __name__ == "__main__":
    main()
