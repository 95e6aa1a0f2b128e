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

# A long file name gets a default --name within the 64-character limit: a
# readable prefix with the problem number and a hash, the same every time.
long=75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__
cp "$T/19_ReLU.py" "$T/$long.py"
for run in 1 2; do
    "$K" import kernelbench "$T/$long.py" --out-shape "batch_size, dim" -o "$T/long$run" --json \
        >"$T/out" 2>"$T/err" || fail "import of a long name: $(cat "$T/err")"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["workload"])' "$T/out" \
        >"$T/name$run" || fail "--json: $(cat "$T/out")"
done
name=$(cat "$T/name1")
cmp -s "$T/name1" "$T/name2" || fail "the derived name changed between runs: $name, $(cat "$T/name2")"
[ ${#name} -le 64 ] || fail "derived name $name is ${#name} characters"
[[ $name =~ ^kb_75_conv_transposed_2d_asymmetric_input_asymmetric_ke_[0-9a-f]{8}$ ]] ||
    fail "derived name $name is not a readable prefix and a hash"

has_torch=0
# The sandbox's python3 (not this shell's): the policy must let torch load.
"$K" sandbox --policy script -- python3 -c "import torch" >"$T/out" 2>&1 && has_torch=1
grep -q "refused syscall" "$T/out" && fail "the script sandbox refuses torch: $(cat "$T/out")"
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
