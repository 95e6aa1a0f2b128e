"""gemm_bf16 inputs: A ~ N(0, 1), B ~ U(-sqrt(3), sqrt(3)) / sqrt(k), bfloat16.

Usage: python3 inputs.py case.json OUTDIR
B's scale gives every entry of C = A @ B unit variance for any k, so one
fixed tolerance bounds the error of float32 accumulation across all cases.
numpy has no bfloat16: values are rounded from float32 to nearest (ties to
even) and stored as the upper 16 bits, viewed as 'V2' (kiln's convention,
formats/npy.h).
"""
import json
import os
import sys

import numpy as np

CHUNK_ELEMS = 1 << 22


def to_bf16(f32):
    u = f32.view(np.uint32)
    u = u + (np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1)))
    return (u >> 16).astype(np.uint16)


def fill(rng, shape, draw):
    out = np.empty(shape, dtype=np.uint16)
    step = max(1, CHUNK_ELEMS // shape[1])
    for lo in range(0, shape[0], step):
        hi = min(shape[0], lo + step)
        out[lo:hi] = to_bf16(np.asarray(draw((hi - lo, shape[1])), dtype=np.float32))
    return out


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    m = int(case["sizes"]["m"])
    n = int(case["sizes"]["n"])
    k = int(case["sizes"]["k"])
    rng = np.random.default_rng(int(case["seed"]))
    a = fill(rng, (m, k), lambda s: rng.standard_normal(s, dtype=np.float32))
    r = np.sqrt(3.0)
    b = fill(rng, (k, n), lambda s: rng.uniform(-r, r, s) / np.sqrt(k))
    np.save(os.path.join(sys.argv[2], "A.npy"), a.view("V2"))
    np.save(os.path.join(sys.argv[2], "B.npy"), b.view("V2"))


if __name__ == "__main__":
    main()
