#!/bin/bash
# eval_gpu.sh - the vendor baselines end to end on a GPU: `kiln eval` of the
# sgemm and saxpy starting kernels must report the cuBLAS SGEMM / memcpy
# baseline as timed ("ok"), at rates an H200 can reach (SGEMM in float32,
# not TF32: about 51 TFLOP/s measured; a device copy about 4.2 TB/s read
# plus written), with each case's speedup_vs_baseline = baseline_ms /
# median. Exits 77 without a GPU.
set -u
k=${KILN_BIN:?run through ctest}
src=${KILN_SOURCE_DIR:?run through ctest}
export KILN_DATA_DIR="$src"
if [ ! -e /dev/nvidiactl ]; then
    echo "skipped: no NVIDIA GPU (/dev/nvidiactl absent)"
    exit 77
fi
work=$(mktemp -d /tmp/kiln-baseline-XXXXXX)
trap 'rm -rf "$work"' EXIT

# check WORKLOAD KIND LOW HIGH UNIT: the verdict in $work/WORKLOAD.json has
# the baseline KIND timed on every cuda performance case at a rate (flops or
# bytes per second from the baseline's own declaration) within LOW..HIGH.
check()
{
    python3 - "$work/$1.json" "$src/workloads/$1/workload.json" "$2" "$3" "$4" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
wl = json.load(open(sys.argv[2]))
kind, lo, hi = sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
b = d["baseline"]
assert b["kind"] == kind, b
assert b["status"] == "ok", "baseline not timed: %s" % b["detail"]
assert d["status"] == "pass", (d["status"], d["detail"])
perf = {c["name"]: c["sizes"] for c in wl["cases"]
        if c["kind"] == "performance" and "cuda" in c.get("backends", ["cuda"])}
assert set(b["ms"]) == set(perf), (sorted(b["ms"]), sorted(perf))
for name, ms in sorted(b["ms"].items()):
    s = perf[name]
    if kind == "cublas_sgemm":
        rate = 2.0 * s["m"] * s["n"] * s["k"] / (ms * 1e-3)
    else:
        expr = wl["baseline"]["bytes"]
        rate = eval(expr, {}, dict(s)) / (ms * 1e-3)
    print("%s %s: %.4f ms, %.3g per second" % (kind, name, ms, rate))
    assert lo <= rate <= hi, (name, ms, rate, lo, hi)
for c in d["cases"]:
    if c["scored"]:
        want = c["baseline_ms"] / c["timing"]["median"]
        assert abs(c["speedup_vs_baseline"] - want) <= 1e-9 * want, c
assert d["speedup_vs_baseline"] > 0, d["speedup_vs_baseline"]
# Compiled for the GPU's own architecture, asked from it (issue #30).
t = d["target"]
assert t["from"] == "the GPU" and t["limits"] == "queried", t
assert d["arch"] == t["arch"] and d["arch"].startswith("sm_"), (d["arch"], t)
print("compiled for %s (%s, limits %s)" % (d["arch"], t["from"], t["limits"]))
PY
}

fail=0
"$k" eval sgemm "$src/workloads/sgemm/kernel.cu" --backend cuda --no-reference --warmups 5 \
    --iterations 20 --work "$work/sgemm-work" --json >"$work/sgemm.json" 2>"$work/sgemm.err" ||
    { echo "FAIL: kiln eval sgemm"; tail -20 "$work/sgemm.err"; fail=1; }
# SGEMM float32: 5 .. 75 TFLOP/s (TF32 tensor cores would be far above).
[ $fail = 1 ] || check sgemm cublas_sgemm 5e12 75e12 || fail=1

"$k" eval saxpy "$src/workloads/saxpy/kernel.cu" --backend cuda --no-reference --warmups 5 \
    --iterations 20 --work "$work/saxpy-work" --json >"$work/saxpy.json" 2>"$work/saxpy.err" ||
    { echo "FAIL: kiln eval saxpy"; tail -20 "$work/saxpy.err"; fail=1; }
# Device copy: 0.5 .. 6 TB/s read plus written.
[ -s "$work/saxpy.json" ] && { check saxpy memcpy 0.5e12 6e12 || fail=1; }

# The harness logs of the baseline runs, for whoever reads the test output.
for w in sgemm saxpy; do
    [ -f "$work/$w-work/baseline/run/log.txt" ] && { echo "--- $w baseline log"; cat "$work/$w-work/baseline/run/log.txt"; }
done
[ $fail = 0 ] && echo "ok: vendor baselines on the GPU"
exit $fail
