"""references.py WORKLOADS_DIR - each built-in reference.py against a
plain-loop oracle (float64, one output element at a time, written from the
workload's description) on small cases, several seeds.

The references are the oracles of every verdict, and they are written for
speed (chunks of rows, sliding windows, tensordot): this checks the fast
form against the obvious one. Chunk sizes are shrunk so that small cases
cross chunk boundaries. Each script runs in this process (main() with
sys.argv set), the way kiln runs it except for the sandbox.
"""
import importlib.util, json, math, os, sys, tempfile

import numpy as np

WL = sys.argv[1]
SEEDS = (1, 2, 977)


def load(workload, script, shrink=True):
    spec = importlib.util.spec_from_file_location(
        "%s_%s" % (workload, script), os.path.join(WL, workload, script + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # Small cases cross chunk and tile boundaries.
    for name, value in () if not shrink else (("CHUNK", 64), ("CHUNK_ELEMS", 64), ("BAND_ELEMS", 64), ("TILE", 4)):
        if hasattr(mod, name):
            setattr(mod, name, value)
    return mod


def scalars(workload):
    """case.json's "scalars" as kiln writes them: each fixed scalar's value,
    a float32 rounded to float32 (pipeline/inputs.c)."""
    sig = json.load(open(os.path.join(WL, workload, "workload.json")))["signature"]
    out = {}
    for a in sig:
        if a["kind"] == "scalar" and "value" in a:
            v = a["value"]
            out[a["name"]] = float(np.float32(v)) if a["type"] == "float32" else v
    return out


def run(workload, sizes, seed, tmp, shrink=True):
    """inputs.py then reference.py; {name: array} of both directories."""
    case = os.path.join(tmp, "case.json")
    ind, outd = os.path.join(tmp, "in"), os.path.join(tmp, "out")
    for d in (ind, outd):
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
    with open(case, "w") as f:
        json.dump({"case": "t", "seed": seed, "sizes": sizes, "scalars": scalars(workload)}, f)
    argv = sys.argv
    try:
        sys.argv = ["inputs.py", case, ind]
        load(workload, "inputs").main()
        sys.argv = ["reference.py", case, ind, outd]
        load(workload, "reference", shrink).main()
    finally:
        sys.argv = argv
    arrays = {}
    for d in (ind, outd):
        for f in os.listdir(d):
            arrays[f[:-4]] = np.load(os.path.join(d, f))
    return arrays


def oracle_saxpy(t, z):
    return [2.5 * float(a) + float(b) for a, b in zip(t["x"], t["y"])]


def oracle_reduce_sum(t, z):
    return [math.fsum(float(v) for v in t["x"])]


def oracle_sgemm(t, z):
    a, b = t["A"], t["B"]
    return [[math.fsum(float(a[i, p]) * float(b[p, j]) for p in range(z["k"]))
             for j in range(z["n"])] for i in range(z["m"])]


def bf16_float(u16):
    """bfloat16 bits (uint16 or the .npy's 2-byte void) as float64."""
    u = np.asarray(u16).view(np.uint16).astype(np.uint32) << 16
    return u.view(np.float32).astype(np.float64)


def oracle_gemm_bf16(t, z):
    """The exact sums (bf16 products and these short sums are exact in
    float64), rounded once to bfloat16 by hand: nearest, ties to even. The
    result is bfloat16 values as float64, compared bit for bit."""
    a, b = bf16_float(t["A"]), bf16_float(t["B"])
    out = []
    for i in range(z["m"]):
        for j in range(z["n"]):
            s = math.fsum(a[i, p] * b[p, j] for p in range(z["k"]))
            if s == 0.0:
                out.append(0.0)
                continue
            e = math.frexp(abs(s))[1] - 8  # 8 significand bits: ulp 2^e
            out.append(math.ldexp(round(math.ldexp(s, -e)), e))  # round(): ties to even
    return [out[i * z["n"]:(i + 1) * z["n"]] for i in range(z["m"])]


def oracle_transpose(t, z):
    x = t["x"]
    return [[x[r, c] for r in range(z["rows"])] for c in range(z["cols"])]


def oracle_softmax_rows(t, z):
    out = []
    for row in t["x"]:
        m = max(float(v) for v in row)
        e = [math.exp(float(v) - m) for v in row]
        s = math.fsum(e)
        out.append([v / s for v in e])
    return out


def oracle_layernorm(t, z):
    eps = float(np.float32(1e-5))
    out = []
    for row in t["x"]:
        n = len(row)
        mean = math.fsum(float(v) for v in row) / n
        var = math.fsum((float(v) - mean) ** 2 for v in row) / n
        out.append([(float(v) - mean) / math.sqrt(var + eps) * float(g) + float(b)
                    for v, g, b in zip(row, t["gamma"], t["beta"])])
    return out


def oracle_conv2d(t, z):
    x, w = t["x"], t["weight"]
    pad_h = (z["p"] - z["h"] + z["r"] - 1) // 2
    pad_w = (z["q"] - z["w"] + z["s"] - 1) // 2
    out = np.zeros((z["n"], z["k"], z["p"], z["q"]))
    for b in range(z["n"]):
        for o in range(z["k"]):
            for y in range(z["p"]):
                for xx in range(z["q"]):
                    terms = []
                    for ci in range(z["c"]):
                        for i in range(z["r"]):
                            for j in range(z["s"]):
                                yy, x2 = y - pad_h + i, xx - pad_w + j
                                if 0 <= yy < z["h"] and 0 <= x2 < z["w"]:
                                    terms.append(float(x[b, ci, yy, x2]) * float(w[o, ci, i, j]))
                    out[b, o, y, xx] = math.fsum(terms)
    return out


def conv(n, c, h, w, k, r, s, p, q):
    return dict(n=n, c=c, h=h, w=w, k=k, r=r, s=s, p=p, q=q)


# (workload, output, oracle, cases): cases at odd sizes, larger than a
# shrunk chunk where the reference works in chunks.
CHECKS = [
    ("saxpy", "out", oracle_saxpy, [dict(n=1), dict(n=200)]),
    ("reduce_sum", "out", oracle_reduce_sum, [dict(n=1), dict(n=301)]),
    ("sgemm", "C", oracle_sgemm, [dict(m=1, n=1, k=1), dict(m=13, n=7, k=11), dict(m=70, n=3, k=5)]),
    ("gemm_bf16", "C", oracle_gemm_bf16, [dict(m=1, n=1, k=1), dict(m=13, n=7, k=11),
                                          dict(m=70, n=3, k=5), dict(m=3, n=9, k=300)]),
    ("transpose", "out", oracle_transpose, [dict(rows=1, cols=1), dict(rows=37, cols=5),
                                            dict(rows=3, cols=70), dict(rows=9, cols=13)]),
    ("softmax_rows", "out", oracle_softmax_rows, [dict(rows=1, cols=1), dict(rows=33, cols=7),
                                                  dict(rows=2, cols=70)]),
    ("layernorm", "out", oracle_layernorm, [dict(rows=5, cols=1), dict(rows=33, cols=7),
                                            dict(rows=2, cols=70)]),
    ("conv2d", "out", oracle_conv2d, [conv(1, 1, 1, 1, 1, 1, 1, 1, 1),
                                      conv(2, 3, 7, 5, 2, 3, 3, 7, 5),    # same
                                      conv(1, 2, 9, 8, 3, 3, 5, 7, 4),    # valid
                                      conv(1, 2, 3, 3, 2, 5, 5, 3, 3)]),  # filter > image
]


def old_transpose(t, z):
    """transpose's reference before it was tiled: numpy's one-shot copy."""
    return np.ascontiguousarray(t["x"].T)


# Former implementations kept as oracles, at sizes past the real tiles and
# chunks: the new form must give the same bytes.
FORMER = [("transpose", "out", old_transpose, [dict(rows=700, cols=1100), dict(rows=1, cols=3000),
                                               dict(rows=3000, cols=1)])]


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for workload, name, former, cases in FORMER:
            for sizes in cases:
                for seed in SEEDS:
                    t = run(workload, sizes, seed, tmp, shrink=False)
                    want = former(t, sizes)
                    if t[name].dtype != want.dtype or t[name].tobytes() != want.tobytes():
                        failures += 1
                        print("FAIL: %s %s seed %d: not the former implementation's bytes" %
                              (workload, sizes, seed))
            print("ok: %s reference gives its former implementation's bytes (%d cases x %d "
                  "seeds)" % (workload, len(cases), len(SEEDS)))
        for workload, name, oracle, cases in CHECKS:
            for sizes in cases:
                for seed in SEEDS:
                    t = run(workload, sizes, seed, tmp)
                    want = np.asarray(oracle(t, sizes), dtype=np.float64)
                    got = (bf16_float(t[name]) if workload == "gemm_bf16" else
                           t[name].astype(np.float64))
                    # Both are float64 math rounded to float32: equal but for
                    # summation order, far inside any workload's tolerance.
                    # gemm_bf16's sums are exact, its one rounding the same.
                    exact = workload in ("transpose", "gemm_bf16")
                    ok = (got.shape == want.reshape(got.shape).shape and
                          (np.array_equal(got, want.reshape(got.shape)) if exact else
                           np.allclose(got, want.reshape(got.shape), rtol=1e-6, atol=1e-6)))
                    if not ok:
                        failures += 1
                        err = np.max(np.abs(got - want.reshape(got.shape)))
                        print("FAIL: %s %s seed %d: reference differs from the loop oracle "
                              "(max abs diff %g)" % (workload, sizes, seed, err))
            print("ok: %s reference matches its loop oracle (%d cases x %d seeds)" %
                  (workload, len(cases), len(SEEDS)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
