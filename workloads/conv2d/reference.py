"""conv2d reference: zero-padded cross-correlation in float64, per image.

Usage: python3 reference.py case.json INDIR OUTDIR
Each image (and, for large ones, each band of output rows) is unfolded with
a sliding-window view and contracted with the weights by one tensordot, so
the float64 working set stays bounded.
"""
import json
import os
import sys

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

BAND_ELEMS = 1 << 24


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    z = {key: int(v) for key, v in case["sizes"].items()}
    n, c, h, w, k, r, s, p, q = (z[key] for key in ("n", "c", "h", "w", "k", "r", "s", "p", "q"))
    if (p - h + r - 1) % 2 or (q - w + s - 1) % 2 or p < h - r + 1 or q < w - s + 1:
        sys.exit("conv2d reference: p, q must be h - r + 1 + 2*pad_h, w - s + 1 + 2*pad_w")
    pad_h = (p - h + r - 1) // 2
    pad_w = (q - w + s - 1) // 2
    x = np.load(os.path.join(sys.argv[2], "x.npy"), mmap_mode="r")
    weight = np.load(os.path.join(sys.argv[2], "weight.npy"))
    if x.shape != (n, c, h, w) or weight.shape != (k, c, r, s):
        sys.exit("conv2d reference: x must be %s and weight %s" % ((n, c, h, w), (k, c, r, s)))
    w64 = weight.astype(np.float64)
    out = np.empty((n, k, p, q), dtype=np.float32)
    band = max(1, BAND_ELEMS // (c * r * s * q))
    for b in range(n):
        xp = np.zeros((c, p + r - 1, q + s - 1))
        # The padded image is p + r - 1 tall; pads cover rows before and after x.
        rows = min(h, p + r - 1 - pad_h)
        cols = min(w, q + s - 1 - pad_w)
        xp[:, pad_h:pad_h + rows, pad_w:pad_w + cols] = x[b, :, :rows, :cols]
        win = sliding_window_view(xp, (r, s), axis=(1, 2))  # (c, p, q, r, s)
        for y0 in range(0, p, band):
            part = win[:, y0:y0 + band]
            out[b, :, y0:y0 + band] = np.tensordot(w64, part, axes=([1, 2, 3], [0, 3, 4]))
    np.save(os.path.join(sys.argv[3], "out.npy"), out)


if __name__ == "__main__":
    main()
