#!/bin/bash
# import.sh: kiln import kernelbench end to end. Converts a problem with the
# command, compares with the shipped workload (same workload.json and
# scripts), then runs `kiln workload check` on every shipped KernelBench
# workload: where python3 has torch it must pass; where it has not, every
# script must stop with the message that names torch and the fix.
set -u
fail() { echo "FAIL: $*"; exit 1; }
K=${KILN_BIN:?} SRC=${KILN_SOURCE_DIR:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
kb=$SRC/workloads/kernelbench

# The command reproduces a shipped workload byte for byte.
cp "$kb/kb_19_relu/PROBLEM.py" "$T/19_ReLU.py"
(cd "$T" && "$K" import kernelbench 19_ReLU.py --out-shape "batch_size, dim" \
    --kernel "$kb/kb_19_relu/kernel.cu" -o relu) >"$T/out" 2>&1 || fail "import: $(cat "$T/out")"
for f in workload.json inputs.py reference.py kernel.cu; do
    cmp -s "$T/relu/$f" "$kb/kb_19_relu/$f" || fail "$f differs from the shipped kb_19_relu/$f"
done
# --json: one object saying what was written; --quiet: nothing on stdout.
"$K" import kernelbench "$T/19_ReLU.py" --out-shape "batch_size, dim" -o "$T/j" --json \
    >"$T/out" 2>"$T/err" || fail "import --json: $(cat "$T/err")"
python3 - "$T/out" "$T/j" <<'PY' || fail "import --json printed: $(cat "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 1 and d["workload"] == "kb_19_relu" and d["dir"] == sys.argv[2], d
assert d["out_shape"] == "batch_size, dim" and d["kernel"] is False and d["inputs"] == 1, d
assert d["next"] == "kiln workload check " + sys.argv[2], d
PY
"$K" import kernelbench "$T/19_ReLU.py" --out-shape "batch_size, dim" -o "$T/q" --quiet \
    >"$T/out" 2>&1 || fail "import --quiet: $(cat "$T/out")"
[ -s "$T/out" ] && fail "import --quiet printed: $(cat "$T/out")"
[ -s "$T/q/workload.json" ] || fail "import --quiet wrote no workload"
"$K" import kernelbench "$T/19_ReLU.py" --out-shape "dim" -o "$T/qj" --quiet --json >"$T/out" 2>&1
[ $? = 2 ] || fail "import --quiet --json was not refused: $(cat "$T/out")"
# Usage errors exit 2 and say what to give.
"$K" import kernelbench "$T/19_ReLU.py" -o "$T/x" >"$T/out" 2>&1
[ $? = 2 ] && grep -q -- "--out-shape is needed" "$T/out" || fail "no --out-shape: $(cat "$T/out")"
"$K" import kernelbench "$T/19_ReLU.py" --out-shape "dim" -o "$T/relu" >"$T/out" 2>&1
[ $? = 1 ] && grep -q "kiln does not overwrite" "$T/out" || fail "existing dir: $(cat "$T/out")"

has_torch=0
python3 -c "import torch" 2>/dev/null && has_torch=1
for d in "$kb"/kb_*/; do
    "$K" workload check "$d" >"$T/out" 2>&1
    rc=$?
    if [ $has_torch = 1 ]; then
        [ $rc = 0 ] || fail "workload check $d: $(tail -5 "$T/out")"
    else
        grep -q "parses: $(basename "$d")" "$T/out" || fail "$d does not parse: $(cat "$T/out")"
        [ $rc = 1 ] || fail "workload check $d exited $rc without torch"
        grep -q "importing torch failed (No module named 'torch'). Fix:" "$T/out" ||
            fail "$d: no torch message: $(cat "$T/out")"
    fi
done
echo "ok (torch: $has_torch)"
