"""transpose reference: out = x.T, copied into C order.

Usage: python3 reference.py case.json INDIR OUTDIR
Copied tile by tile: numpy's one-shot copy of a big x.T walks one side with
a stride of a whole row, a cache miss per element, and is several times
slower than tiles that fit in cache. The same bytes either way.
"""
import json
import os
import sys

import numpy as np

TILE = 256  # rows and columns per tile: two float32 tiles fit in L2


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    rows = int(case["sizes"]["rows"])
    cols = int(case["sizes"]["cols"])
    x = np.load(os.path.join(sys.argv[2], "x.npy"), mmap_mode="r")
    if x.shape != (rows, cols):
        sys.exit("transpose reference: x must have shape (%d, %d)" % (rows, cols))
    out = np.empty((cols, rows), dtype=np.float32)
    for r0 in range(0, rows, TILE):
        for c0 in range(0, cols, TILE):
            out[c0:c0 + TILE, r0:r0 + TILE] = x[r0:r0 + TILE, c0:c0 + TILE].T
    np.save(os.path.join(sys.argv[3], "out.npy"), out)


if __name__ == "__main__":
    main()
