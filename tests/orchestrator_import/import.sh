#!/bin/bash
# import.sh: kiln import kernelbench's usage errors, and `kiln workload check`
# on every shipped KernelBench workload: where the script sandbox's python3
# has torch it must pass; where it has not, every script must stop with the
# message that names torch and the fix. (import_probe.sh imports problems.)
set -u
fail() { echo "FAIL: $*"; exit 1; }
K=${KILN_BIN:?} SRC=${KILN_SOURCE_DIR:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
kb=$SRC/workloads/kernelbench

# Usage errors exit 2 and say what to give.
"$K" import kernelbench >"$T/out" 2>&1
[ $? = 2 ] && grep -q "PROBLEM.py|DIR" "$T/out" || fail "no problem: $(cat "$T/out")"
"$K" import kernelbench "$kb/kb_19_relu/PROBLEM.py" --name Bad-Name -o "$T/x" >"$T/out" 2>&1
[ $? = 2 ] && grep -q "use \[a-z0-9_\], at most 64" "$T/out" || fail "--name: $(cat "$T/out")"
"$K" import kernelbench "$kb" --name kb_x >"$T/out" 2>&1
[ $? = 2 ] && grep -q "a folder's are derived" "$T/out" || fail "folder --name: $(cat "$T/out")"
"$K" import kernelbench "$kb/kb_19_relu/PROBLEM.py" --out-shape "dim" >"$T/out" 2>&1
[ $? = 2 ] || fail "--out-shape (gone: the sandbox learns shapes) was accepted: $(cat "$T/out")"

# The sandbox's python3 (not this shell's): the policy must let torch load.
has_torch=0
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
