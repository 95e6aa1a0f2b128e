"""layernorm reference: two-pass mean and biased variance in float64.

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
    d = sys.argv[2]
    x = np.load(os.path.join(d, "x.npy"), mmap_mode="r")
    gamma = np.load(os.path.join(d, "gamma.npy")).astype(np.float64)
    beta = np.load(os.path.join(d, "beta.npy")).astype(np.float64)
    if x.shape != (rows, cols) or gamma.shape != (cols,) or beta.shape != (cols,):
        sys.exit("layernorm reference: inputs do not match rows=%d cols=%d" % (rows, cols))
    # workload.json's "eps" as the kernel receives it (float32), from kiln.
    eps = float(case["scalars"]["eps"])
    out = np.empty((rows, cols), dtype=np.float32)
    step = max(1, CHUNK_ELEMS // cols)
    for lo in range(0, rows, step):
        v = np.asarray(x[lo:lo + step], dtype=np.float64)
        dev = v - v.mean(axis=1, keepdims=True)
        var = (dev * dev).mean(axis=1, keepdims=True)
        out[lo:lo + step] = dev / np.sqrt(var + eps) * gamma + beta
    np.save(os.path.join(sys.argv[3], "out.npy"), out)


if __name__ == "__main__":
    main()
