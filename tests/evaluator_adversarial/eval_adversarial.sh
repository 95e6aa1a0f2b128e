#!/bin/sh
# End to end through the trusted parent: `kiln eval saxpy` on every
# adversarial candidate must end with the status its `// kiln-eval-expect:`
# line names (phase_detect and replay_previous are honest under kiln's
# per-run module reload, so they pass). Needs a GPU.
set -u
k=${KILN_BIN:?}
src=${KILN_SOURCE_DIR:?}
if [ ! -e /dev/nvidiactl ]; then
    echo "skipped: no NVIDIA GPU (/dev/nvidiactl absent)"
    exit 77
fi
work=$(mktemp -d /tmp/kiln-adv-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
for f in "$src"/tests/evaluator_adversarial/*.cu; do
    name=$(basename "$f" .cu)
    want=$(sed -n 's|^// kiln-eval-expect: *||p' "$f")
    [ -n "$want" ] || { echo "FAIL: $name has no kiln-eval-expect line"; fail=1; continue; }
    "$k" eval saxpy "$f" --backend cuda --no-reference --no-baseline --timeout 20 --warmups 2 --iterations 10 --seed 1 \
        --work "$work/inputs" --json >"$work/out.json" 2>"$work/err.txt"
    got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$work/out.json" 2>/dev/null)
    if [ "$got" = "$want" ]; then
        echo "ok    $name: $got"
    else
        echo "FAIL  $name: got '${got:-no verdict}', want $want"; tail -3 "$work/err.txt"; fail=1
    fi
done
exit $fail
