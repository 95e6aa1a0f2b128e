#!/bin/bash
# lowprec.sh cpu|cuda - the low-precision hidden-cheat classes (issue 36)
# end to end through `kiln eval`: each lowprec/*.c (cpu) or lowprec/*.cu
# (cuda) names its workload (`// kiln-eval-workload:`) and the status it
# must end with (`// kiln-eval-expect:`): fp8 computing, bf16 and fp16
# accumulation passed off as bf16 with fp32 accumulation, a kernel reading
# the reference, TF32 in an fp32 workload; and an honest control that must
# pass. The cpu run needs no GPU; the cuda one skips without one.
set -u
k=${KILN_BIN:?}
src=${KILN_SOURCE_DIR:?}
backend=${1:?usage: lowprec.sh cpu|cuda}
ext=c
if [ "$backend" = cuda ]; then
    ext=cu
    if [ ! -e /dev/nvidiactl ]; then
        echo "skipped: no NVIDIA GPU (/dev/nvidiactl absent)"
        exit 77
    fi
fi
work=$(mktemp -d /tmp/kiln-lowprec-XXXXXX)
trap 'rm -rf "$work"' EXIT
# Each workload as a copy without its big cases (at most 2^30 multiply-adds,
# plus one small performance case per backend): the cheats fail on
# precision, which small cases show as well, and the naive kernels here
# would take minutes on an 8192 x 14336 x 4096 product.
small_copy() {
    cp -r "$src/workloads/$1" "$work/$1"
    python3 - "$work/$1/workload.json" <<'PY'
import json, sys
path = sys.argv[1]
w = json.load(open(path))
cases = [c for c in w["cases"] if c["sizes"]["m"] * c["sizes"]["n"] * c["sizes"]["k"] <= 2**30]
for b in w["backends"]:
    if not any(c["kind"] == "performance" and b in c.get("backends", w["backends"]) for c in cases):
        cases.append({"name": "small_%s" % b, "kind": "performance", "backends": [b],
                      "sizes": {"m": 256, "n": 192, "k": 136}})
w["cases"] = cases
json.dump(w, open(path, "w"), indent=1)
PY
}
small_copy gemm_bf16
small_copy sgemm
fail=0 n=0
for f in "$src"/tests/evaluator_adversarial/lowprec/*."$ext"; do
    name=$(basename "$f")
    wl=$(sed -n 's|^// kiln-eval-workload: *||p' "$f")
    want=$(sed -n 's|^// kiln-eval-expect: *||p' "$f")
    if [ -z "$wl" ] || [ -z "$want" ]; then
        echo "FAIL  $name: no kiln-eval-workload or kiln-eval-expect line"
        fail=1
        continue
    fi
    n=$((n + 1))
    # The inputs of each workload are made once and shared (--work).
    "$k" eval "$work/$wl" "$f" --backend "$backend" --no-reference --no-baseline --timeout 120 \
        --warmups 1 --iterations 3 --seed 1 --work "$work/inputs-$wl" --json >"$work/out.json" \
        2>"$work/err.txt"
    got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' \
        "$work/out.json" 2>/dev/null)
    if [ "$got" = "$want" ]; then
        why=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["detail"][:150])' \
            "$work/out.json" 2>/dev/null)
        echo "ok    $name ($wl, $backend): $got${why:+: $why}"
    else
        echo "FAIL  $name ($wl, $backend): got '${got:-no verdict}', want $want"
        tail -5 "$work/err.txt"
        fail=1
    fi
done
[ "$n" -ge 5 ] || { echo "FAIL: only $n candidates found"; fail=1; }
exit $fail
