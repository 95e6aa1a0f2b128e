#!/bin/sh
# The parent refuses a cubin that imports the device heap (issue 13 item 3)
# before anything runs it: `kiln eval` of heap_stash.cu ends as
# compile_error naming malloc, with no GPU needed (nvcc compiles in the
# compile sandbox; the harness is never started). A small copy of the
# saxpy workload keeps the inputs tiny.
set -u
k=${KILN_BIN:?}
src=${KILN_SOURCE_DIR:?}
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "skipped: no nvcc (the CUDA toolkit is needed to compile the candidate)"
    exit 77
fi
work=$(mktemp -d /tmp/kiln-heap-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$src/workloads/saxpy" "$work/saxpy"
python3 - "$work/saxpy/workload.json" <<'PY'
import json, sys
p = sys.argv[1]
w = json.load(open(p))
w["cases"] = [{"name": "n31", "kind": "correctness", "sizes": {"n": 31}},
              {"name": "small", "kind": "performance", "sizes": {"n": 4099}}]
w["held_out"] = [{"name": "held", "sizes": {"n": 1001}}]
w.pop("baseline", None)
json.dump(w, open(p, "w"))
PY
"$k" eval "$work/saxpy" "$src/tests/evaluator_adversarial/heap_stash.cu" --backend cuda \
    --no-reference --no-baseline --work "$work/eval" --json >"$work/out.json" 2>"$work/err.txt"
got=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["status"], d["stage"])' \
    "$work/out.json" 2>/dev/null)
detail=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["detail"])' \
    "$work/out.json" 2>/dev/null)
if [ "$got" != "compile_error compile" ]; then
    echo "FAIL: got '${got:-no verdict}', want 'compile_error compile'"; tail -5 "$work/err.txt"
    exit 1
fi
case $detail in
*"device-side malloc"*"survives module reloads"*) echo "ok: $detail" ;;
*) echo "FAIL: the reason does not name malloc and why: $detail"; exit 1 ;;
esac
