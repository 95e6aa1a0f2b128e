"""saxpy reference: out = a * x + y, evaluated in float64, rounded to float32.

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
    a = float(case["scalars"]["a"])  # workload.json's "a", as the kernel receives it
    x = np.load(os.path.join(sys.argv[2], "x.npy"), mmap_mode="r")
    y = np.load(os.path.join(sys.argv[2], "y.npy"), mmap_mode="r")
    if x.shape != (n,) or y.shape != (n,):
        sys.exit("saxpy reference: x and y must have shape (%d,)" % n)
    out = np.empty(n, dtype=np.float32)
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        out[lo:hi] = a * x[lo:hi].astype(np.float64) + y[lo:hi].astype(np.float64)
    np.save(os.path.join(sys.argv[3], "out.npy"), out)


if __name__ == "__main__":
    main()
