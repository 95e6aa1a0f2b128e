"""softmax_rows reference: max-subtracted softmax per row in float64.

Usage: python3 reference.py case.json INDIR OUTDIR
"""
import json
import os
import sys

import numpy as np

CHUNK_ELEMS = 1 << 21


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    rows = int(case["sizes"]["rows"])
    cols = int(case["sizes"]["cols"])
    x = np.load(os.path.join(sys.argv[2], "x.npy"), mmap_mode="r")
    if x.shape != (rows, cols):
        sys.exit("softmax_rows reference: x must have shape (%d, %d)" % (rows, cols))
    out = np.empty((rows, cols), dtype=np.float32)
    step = max(1, CHUNK_ELEMS // cols)
    for lo in range(0, rows, step):
        v = np.asarray(x[lo:lo + step], dtype=np.float64)
        e = np.exp(v - v.max(axis=1, keepdims=True))
        out[lo:lo + step] = e / e.sum(axis=1, keepdims=True)
    np.save(os.path.join(sys.argv[3], "out.npy"), out)


if __name__ == "__main__":
    main()
