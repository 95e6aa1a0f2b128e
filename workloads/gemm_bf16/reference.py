"""gemm_bf16 reference: C = A @ B in float64 (numpy matmul) from the bfloat16
inputs, rounded once to bfloat16 (nearest, ties to even).

Usage: python3 reference.py case.json INDIR OUTDIR
Rows of A are processed in blocks to bound the float64 working set. The
rounding goes float64 -> float32 -> bfloat16: a value within 2^-24 of a
bfloat16 midpoint may land on the other neighbour, a difference the
tolerance (one bfloat16 ulp) covers.
"""
import json
import os
import sys

import numpy as np

CHUNK_ELEMS = 1 << 23


def from_bf16(u16):
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def to_bf16(f32):
    u = f32.view(np.uint32)
    u = u + (np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1)))
    return (u >> 16).astype(np.uint16)


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    m = int(case["sizes"]["m"])
    n = int(case["sizes"]["n"])
    k = int(case["sizes"]["k"])
    a = np.load(os.path.join(sys.argv[2], "A.npy"), mmap_mode="r")
    b = np.load(os.path.join(sys.argv[2], "B.npy"))
    if a.shape != (m, k) or b.shape != (k, n) or a.dtype.itemsize != 2 or b.dtype.itemsize != 2:
        sys.exit("gemm_bf16 reference: A must be (%d, %d) and B (%d, %d), 2 bytes an element"
                 % (m, k, k, n))
    b64 = from_bf16(b.view(np.uint16)).astype(np.float64)
    c = np.empty((m, n), dtype=np.uint16)
    step = max(1, CHUNK_ELEMS // max(k, n))
    for lo in range(0, m, step):
        a64 = from_bf16(np.asarray(a[lo:lo + step]).view(np.uint16)).astype(np.float64)
        c[lo:lo + step] = to_bf16((a64 @ b64).astype(np.float32))
    np.save(os.path.join(sys.argv[3], "C.npy"), c.view("V2"))


if __name__ == "__main__":
    main()
