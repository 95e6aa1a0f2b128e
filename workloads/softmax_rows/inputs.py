"""softmax_rows inputs: each row is N(0, 1) * scale + offset, float32.

Usage: python3 inputs.py case.json OUTDIR
Per row, from the case seed: scale log-uniform in [0.05, 20] (nearly uniform
to nearly one-hot rows); offset 0 (40% of rows), +U(90, 400) (30%, naive exp
overflows) or -U(90, 400) (30%, naive exp underflows to 0). Generated in
chunks of rows to keep memory near the case's bytes.
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
        k = hi - lo
        scale = np.exp(rng.uniform(np.log(0.05), np.log(20.0), k))
        kind = rng.random(k)
        mag = rng.uniform(90.0, 400.0, k)
        offset = np.where(kind < 0.4, 0.0, np.where(kind < 0.7, mag, -mag))
        z = rng.standard_normal((k, cols), dtype=np.float32)
        x[lo:hi] = z * scale[:, None].astype(np.float32) + offset[:, None].astype(np.float32)
    np.save(os.path.join(sys.argv[2], "x.npy"), x)


if __name__ == "__main__":
    main()
