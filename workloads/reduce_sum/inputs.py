"""reduce_sum inputs: x = sign * exp(N(0, 1)), sign negative with p = 0.2.

Usage: python3 inputs.py case.json OUTDIR
The mean is about 0.99, so the sum is of order n and never near zero, while
the spread (about 2.5x the mean) makes skipped or double-counted elements
visible. Generated in fixed-size chunks to keep memory near the case's bytes.
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
    rng = np.random.default_rng(int(case["seed"]))
    x = np.empty(n, dtype=np.float32)
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        mag = rng.lognormal(0.0, 1.0, hi - lo)
        neg = rng.random(hi - lo) < 0.2
        x[lo:hi] = np.where(neg, -mag, mag)
    np.save(os.path.join(sys.argv[2], "x.npy"), x)


if __name__ == "__main__":
    main()
