"""sgemm reference: C = A @ B in float64 (numpy matmul), rounded to float32.

Usage: python3 reference.py case.json INDIR OUTDIR
Rows of A are processed in blocks to bound the float64 working set.
"""
import json
import os
import sys

import numpy as np

CHUNK_ELEMS = 1 << 23


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    m = int(case["sizes"]["m"])
    n = int(case["sizes"]["n"])
    k = int(case["sizes"]["k"])
    a = np.load(os.path.join(sys.argv[2], "A.npy"), mmap_mode="r")
    b = np.load(os.path.join(sys.argv[2], "B.npy"))
    if a.shape != (m, k) or b.shape != (k, n):
        sys.exit("sgemm reference: A must be (%d, %d) and B (%d, %d)" % (m, k, k, n))
    b64 = b.astype(np.float64)
    c = np.empty((m, n), dtype=np.float32)
    step = max(1, CHUNK_ELEMS // max(k, n))
    for lo in range(0, m, step):
        c[lo:lo + step] = np.asarray(a[lo:lo + step], dtype=np.float64) @ b64
    np.save(os.path.join(sys.argv[3], "C.npy"), c)


if __name__ == "__main__":
    main()
