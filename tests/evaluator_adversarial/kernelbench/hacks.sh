#!/bin/bash
# hacks.sh cpu|cuda - KernelBench's known reward hacks (hacks.py, SECURITY.md
# "KernelBench's reward hacks") on problems imported from real KernelBench
# files (tests/pipeline_kernelbench/level_fixture), each judged by `kiln
# eval` and stopped by the defence its row names (status, stage, a phrase of
# the reason). cpu: the cpu-backend hacks, and the device-heap cache, which
# the parent refuses from the cubin before any GPU is needed (nvcc only);
# cuda: every CUDA hack, on a GPU. Needs torch in the script sandbox's
# python3 (Debian: python3-torch): skipped (77) without it.
. "$KILN_SOURCE_DIR/tests/pipeline_cli/lib.sh"
backend=${1:?usage: hacks.sh cpu|cuda}
HERE=$KILN_SOURCE_DIR/tests/evaluator_adversarial/kernelbench
LEVEL=$KILN_SOURCE_DIR/tests/pipeline_kernelbench/level_fixture
"$KILN_BIN" sandbox --policy script -- python3 -c "import torch" >"$T/out" 2>&1 || {
    grep -q "refused syscall" "$T/out" && fail "the script sandbox refuses torch: $(cat "$T/out")"
    echo "skipped: the script sandbox's python3 has no torch (install python3-torch)"
    exit 77
}
have_nvcc=0
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] && have_nvcc=1
if [ "$backend" = cuda ] && [ ! -e /dev/nvidiactl ]; then
    echo "skipped: no NVIDIA GPU (/dev/nvidiactl absent)"
    exit 77
fi
list=$(python3 "$HERE/hacks.py" list "$backend")
[ "$backend" = cpu ] && [ $have_nvcc = 1 ] &&
    list=$(printf '%s\n%s' "$list" "$(python3 "$HERE/hacks.py" list cuda | grep '^cached_heap_cu ')")
[ -n "$list" ] || fail "no hacks listed for $backend"

# Each problem imported once; on the cpu backend listed for it too (until
# the importer lists it itself: kiln bench does the same). On a cpu run the
# cuda backend is listed as well, on every performance case: an importer
# without a GPU writes cpu-only cases, and the heap-cache row is refused at
# compile, before any case runs.
mkdir -p "$T/wl"
for p in $(echo "$list" | awk '{print $2}' | sort -u); do
    run_kiln "$T/out" "$T/err" import kernelbench "$LEVEL/$p.py" -o "$T/wl/$p" --no-check
    expect_rc 0 "importing $p"
    python3 - "$T/wl/$p/workload.json" "$backend" <<'PY' || fail "adding the cpu backend to $p"
import json, sys
w = json.load(open(sys.argv[1]))
add = {"cpu", "cuda"} if sys.argv[2] == "cpu" else {"cpu"}
w["backends"] = sorted(set(w["backends"]) | add)
for c in w["cases"]:
    if sys.argv[2] == "cpu" and c.get("kind") == "performance" and "backends" in c:
        c["backends"] = sorted(set(c["backends"]) | add)
json.dump(w, open(sys.argv[1], "w"), indent=1)
PY
done

failed=0
while read -r name problem status stage phrase; do
    hb=$(python3 "$HERE/hacks.py" list cuda | awk -v n="$name" '$1 == n {print "cuda"}')
    hb=${hb:-cpu}
    ext=c
    [ "$hb" = cuda ] && ext=cu
    python3 "$HERE/hacks.py" write "$T/wl/$problem" "$name" "$T/$name.$ext" || fail "writing $name"
    run_kiln "$T/out" "$T/err" eval "$T/wl/$problem" "$T/$name.$ext" --backend "$hb" \
        --no-baseline --warmups 1 --iterations 5 --seed 1 --work "$T/eval-$problem-$hb" --json
    got=$(jq_py "$T/out" '"%s %s" % (d["status"], d["stage"])' 2>/dev/null)
    detail=$(jq_py "$T/out" 'd["detail"]' 2>/dev/null)
    ok=1
    [ "${got%% *}" = "$status" ] || ok=0
    [ "$stage" = - ] || [ "${got#* }" = "$stage" ] || ok=0
    [ "$phrase" = - ] || [[ $detail == *"${phrase//_/ }"* ]] || ok=0
    if [ $ok = 1 ]; then
        echo "ok    $name ($problem, $hb): $got${detail:+: ${detail:0:120}}"
    else
        echo "FAIL  $name ($problem, $hb): got '${got:-no verdict}' ($detail), want $status $stage '${phrase//_/ }'"
        tail -3 "$T/err"
        failed=1
    fi
done <<<"$list"
exit $failed
