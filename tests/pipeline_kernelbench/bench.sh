#!/bin/bash
# bench.sh - `kiln bench kernelbench` on a 5-problem level (level_fixture/:
# real KernelBench level-1 files, MIT, README.md) on the cpu backend with
# the replay proposer (bench/kernelbench-replies): interrupted with SIGINT while its second
# problem runs, then the same command again, which must resume that run
# (kiln resume, not a new run), leave the finished one alone, finish the
# level, and print KernelBench's table (fast_p against torch eager, the
# exploit classes refused). Needs torch in the script sandbox's python3
# (Debian: python3-torch); skipped (77) without it.
. "$KILN_SOURCE_DIR/tests/pipeline_cli/lib.sh"
LEVEL=$KILN_SOURCE_DIR/tests/pipeline_kernelbench/level_fixture
"$KILN_BIN" sandbox --policy script -- python3 -c "import torch" >"$T/out" 2>&1 || {
    grep -q "refused syscall" "$T/out" && fail "the script sandbox refuses torch: $(cat "$T/out")"
    echo "skipped: the script sandbox's python3 has no torch (install python3-torch)"
    exit 77
}

# The problems with recorded replies, imported once (the bench takes them
# with --workloads), and the replies written against their signatures.
mkdir -p "$T/wl"
for s in 19_ReLU 20_LeakyReLU; do
    run_kiln "$T/out" "$T/err" import kernelbench "$LEVEL/$s.py" -o "$T/wl/$s" --no-check
    expect_rc 0 "importing $s"
done
# 19: a correct kernel; 20: a no-op over the poisoned output (a known reward
# hack), then a correct one; 21, 23, 47: none (two runs keep the test short;
# tests/evaluator_adversarial/kernelbench judges wrong kernels).
python3 "$KILN_SOURCE_DIR/bench/kernelbench-replies" "$T/wl" "$T/replay" --lang c \
    19_ReLU=relu 20_LeakyReLU=noop,leaky_relu >"$T/out" ||
    fail "bench/kernelbench-replies: $(cat "$T/out")"
B=$T/bench
BENCH=(bench kernelbench "$LEVEL" --proposer replay --replay "$T/replay" --workloads "$T/wl"
    --backend cpu -o "$B" --max-iterations 2 --warmups 1 --iterations 5 --seed 3)

# First pass: SIGINT once the second problem's first candidate is recorded.
sigint_default "$KILN_BIN" "${BENCH[@]}" >"$T/out1" 2>"$T/err1" &
pid=$!
_kiln_bg_pids+=("$pid")
wait_for 600 test -e "$B/runs/20_LeakyReLU/run-001/candidates/001/verdict.json" ||
    fail "the second problem's run never recorded a candidate: $(tail -5 "$T/err1")"
kill -INT "$pid"
wait "$pid"
rc=$?
[ $rc = 130 ] || fail "the interrupted bench exited $rc, not 130: $(tail -5 "$T/err1")"
contains "$T/err1" "stopped while running 20_LeakyReLU.py"
expect_json "$B/bench.json" '[p["state"] for p in d["problems"]]' \
    '["archived", "running", "new", "new", "new"]'
sum19=$(sha256sum "$B/runs/19_ReLU/run-001/summary.json")
[ ! -e "$B/runs/20_LeakyReLU/run-001/summary.json" ] || fail "the cut run finished anyway"

# Other settings for the same directory are refused, naming what differs.
run_kiln "$T/out" "$T/err" "${BENCH[@]}" --iterations 6
expect_rc 2 "the same -o with other options"
contains "$T/err" "was started with other kiln optimize options"

# Second pass: the same command goes on where the first stopped.
run_kiln "$T/out" "$T/err" "${BENCH[@]}"
expect_rc 0 "the resumed bench"
[ -s "$B/logs/20_LeakyReLU-resume.log" ] || fail "the cut run was not resumed (kiln resume)"
[ "$(ls "$B/runs/20_LeakyReLU")" = run-001 ] || fail "a second run was started: $(ls "$B/runs/20_LeakyReLU")"
[ "$(sha256sum "$B/runs/19_ReLU/run-001/summary.json")" = "$sum19" ] ||
    fail "the finished problem was run again"
expect_json "$B/runs/20_LeakyReLU/run-001/history.json" '[h["status"] for h in d]' \
    '["wrong_answer", "pass"]'
expect_json "$B/bench.json" '[p["state"] for p in d["problems"]]' \
    '["archived", "archived", "skipped", "skipped", "skipped"]'
for s in 19_ReLU 20_LeakyReLU; do
    [ -s "$B/archives/$s.tar.zst" ] || fail "no archive of $s"
done
# The table, sorted by problem number; fast_p over all five problems.
contains "$T/out" "vs torch eager  : fast_0 0.400"
grep -q "^  19   19_ReLU.py  *correct " "$T/out" || fail "row 19: $(cat "$T/out")"
grep -q "^  23   23_Softmax.py  *skipped " "$T/out" || fail "row 23: $(cat "$T/out")"
contains "$T/out" "1 output left unwritten (poisoned outputs)"

# A finished bench prints its table without running anything.
run_kiln "$T/out" "$T/err" "${BENCH[@]}" --json
expect_rc 0 "the finished bench, --json"
expect_json "$T/out" '[r["number"] for r in d["rows"]]' '[19, 20, 21, 23, 47]'
expect_json "$T/out" '[r["status"] for r in d["rows"]]' \
    '["correct", "correct", "skipped", "skipped", "skipped"]'
expect_json "$T/out" 'd["complete"] and d["fast_p"]["torch_eager"]["0"]' 0.4
expect_json "$T/out" 'd["fast_p"]["torch_eager"]["timed"]' 2
# fast_1 is what the rows' speedups say (timings are the host's: not asserted).
expect_json "$T/out" 'd["fast_p"]["torch_eager"]["1"] == sum(1 for r in d["rows"] if r["status"] == "correct" and (r["speedup_vs_torch_eager"] or 0) > 1) / 5' True
expect_json "$T/out" '[(e["class"][:2], e["candidates"]) for e in d["exploits_refused"]]' \
    '[["1 ", 1]]'
# The torch baseline: eager timed; torch.compile timed, or unavailable with
# the reason (Debian's torch 1.13 has none).
expect_json "$B/runs/19_ReLU/run-001/summary.json" \
    'd["baseline"]["kind"] == "torch" and d["baseline"]["geomean_ms"] > 0' True
expect_json "$B/runs/19_ReLU/run-001/summary.json" \
    'd["baseline"]["compile"]["status"] == "ok" or "torch.compile" in d["baseline"]["compile"]["detail"]' True
[ ! -e "$B/logs/21_Sigmoid-run.log" ] || fail "a problem without replies was run"

# --baseline-only: KernelBench's own baseline, every problem of a level at
# its own sizes in one sandbox, sorted by number; a problem that fails to
# load says why and costs only its own row.
mkdir -p "$T/lvl"
cp "$LEVEL"/*.py "$T/lvl/"
printf 'import torch\nraise RuntimeError("kiln test: this problem does not load")\n' \
    >"$T/lvl/3_Broken.py"
run_kiln "$T/out" "$T/err" bench kernelbench "$T/lvl" --baseline-only --backend cpu \
    -o "$T/eager" --warmups 1 --iterations 5 --timeout 400
expect_rc 0 "bench --baseline-only"
expect_json "$T/eager/eager.json" '[(r["number"], r["torch_eager_ms"] is not None and r["torch_eager_ms"] > 0) for r in d["rows"]]' \
    '[[3, false], [19, true], [20, true], [21, true], [23, true], [47, true]]'
expect_json "$T/eager/eager.json" '[d["problems"], d["timed"], d["detail"]]' '[6, 5, ""]'
expect_json "$T/eager/eager.json" '"this problem does not load" in d["rows"][0]["reason"]' True
contains "$T/out" "5 of 6 problems timed"
echo "ok: bench"
