"""transpose inputs: x ~ N(0, 1) float32 (every element distinct in practice).

Usage: python3 inputs.py case.json OUTDIR
"""
import json
import os
import sys

import numpy as np

CHUNK_ELEMS = 1 << 22


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    rows = int(case["sizes"]["rows"])
    cols = int(case["sizes"]["cols"])
    rng = np.random.default_rng(int(case["seed"]))
    x = np.empty((rows, cols), dtype=np.float32)
    step = max(1, CHUNK_ELEMS // cols)
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        rng.standard_normal((hi - lo, cols), dtype=np.float32, out=x[lo:hi])
    np.save(os.path.join(sys.argv[2], "x.npy"), x)


if __name__ == "__main__":
    main()
