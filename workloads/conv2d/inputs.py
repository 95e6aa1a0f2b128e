"""conv2d inputs: x ~ N(0, 1), weight ~ U(-sqrt(3), sqrt(3)) / sqrt(c*r*s).

Usage: python3 inputs.py case.json OUTDIR
The weight scale gives every fully-covered output unit variance, so one
fixed tolerance bounds float32 accumulation for any c*r*s.
"""
import json
import os
import sys

import numpy as np

CHUNK_ELEMS = 1 << 22


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    z = {key: int(v) for key, v in case["sizes"].items()}
    n, c, h, w, k, r, s = (z[key] for key in ("n", "c", "h", "w", "k", "r", "s"))
    rng = np.random.default_rng(int(case["seed"]))
    x = np.empty((n * c, h * w), dtype=np.float32)
    step = max(1, CHUNK_ELEMS // (h * w))
    for lo in range(0, n * c, step):
        hi = min(n * c, lo + step)
        rng.standard_normal((hi - lo, h * w), dtype=np.float32, out=x[lo:hi])
    lim = np.sqrt(3.0)
    weight = (rng.uniform(-lim, lim, (k, c, r, s)) / np.sqrt(c * r * s)).astype(np.float32)
    np.save(os.path.join(sys.argv[2], "x.npy"), x.reshape(n, c, h, w))
    np.save(os.path.join(sys.argv[2], "weight.npy"), weight)


if __name__ == "__main__":
    main()
