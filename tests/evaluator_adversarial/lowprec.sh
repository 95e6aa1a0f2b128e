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
    "$k" eval "$wl" "$f" --backend "$backend" --no-reference --no-baseline --timeout 120 \
        --warmups 1 --iterations 3 --seed 1 --work "$work/$wl" --json >"$work/out.json" \
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
