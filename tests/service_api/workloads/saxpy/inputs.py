"""saxpy inputs: x ~ N(0, 1), y ~ U(-4, 4), float32, from the case seed.

Usage: python3 inputs.py case.json OUTDIR
Generated in fixed-size chunks so a 2^28-element case needs little more
memory than its own arrays (and the stream does not depend on the machine).
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
    y = np.empty(n, dtype=np.float32)
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        rng.standard_normal(hi - lo, dtype=np.float32, out=x[lo:hi])
        y[lo:hi] = rng.uniform(-4.0, 4.0, hi - lo)
    np.save(os.path.join(sys.argv[2], "x.npy"), x)
    np.save(os.path.join(sys.argv[2], "y.npy"), y)


if __name__ == "__main__":
    main()
