#!/bin/bash
# nostart.sh CASE - a workload without a starting kernel (issue 29): a copy
# of saxpy with kernel.c and kernel.cu removed, on the cpu backend.
#   eval_pass   kiln eval of a correct candidate passes; no speedup vs start
#   eval_wrong  kiln eval of a wrong one fails with its verdict
#   tune        kiln optimize with the tuner exits 2, no run directory made
#   check       kiln workload check passes and says the kernel part was skipped
#   llm         kiln optimize --proposer llm (tests/orchestrator_llm/fake_server.py)
#               starts from the reference: no "current best" kernel in the
#               prompt, no start row, summary.json says there was no start
. "$(dirname "$0")/lib.sh"
case_name=${1:?usage: nostart.sh CASE}
WL=$T/nostart
cp -r "$KILN_SOURCE_DIR/workloads/saxpy" "$WL" || fail "copying saxpy"
rm -f "$WL/kernel.c" "$WL/kernel.cu"
GOOD=$KILN_SOURCE_DIR/workloads/saxpy/kernel.c
SHORT=(--backend cpu --warmups 1 --iterations 10 --seed 1)
NOTE="no starting kernel (kernel.c): speedups vs the start are not computed"
cd "$T" || exit 1

case "$case_name" in
eval_pass)
    run_kiln "$T/out" "$T/err" eval "$WL" "$GOOD" "${SHORT[@]}"
    expect_rc 0 "kiln eval of a correct candidate without a starting kernel"
    contains "$T/out" "status: pass"
    contains "$T/out" "$NOTE"
    # No fake 1.00x: the speedup column is empty ("-") on every timed row.
    not_contains "$T/out" "1.00x the reference"
    awk '$1 == "cpu_4m" && $10 != "-" { bad = 1 } END { exit bad }' "$T/out" ||
        fail "a speedup vs the start was printed: $(grep cpu_4m "$T/out")"
    contains "$T/err" "kiln: no starting kernel (kernel.c)"
    ;;
eval_wrong)
    run_kiln "$T/out" "$T/err" eval "$WL" "$FIX/saxpy_wrong.c" "${SHORT[@]}" --json
    expect_rc 1 "kiln eval of a wrong candidate without a starting kernel"
    expect_json "$T/out" 'd["status"]' wrong_answer
    expect_json "$T/out" 'd["starting_kernel"]' None
    expect_json "$T/out" 'all(r["speedup_vs_reference"] is None for r in d["rows"])' True
    # The workload's own copy with its kernel: starting_kernel names it.
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_wrong.c" "${SHORT[@]}" --json \
        --no-reference --no-baseline
    expect_rc 1 "kiln eval saxpy of a wrong candidate"
    expect_json "$T/out" 'd["starting_kernel"]' kernel.c
    ;;
tune)
    run_kiln "$T/out" "$T/err" optimize "$WL" "${SHORT[@]}" --max-iterations 3 --results "$T/res"
    expect_rc 2 "kiln optimize with the tuner and no starting kernel"
    contains "$T/err" "has no starting kernel (kernel.c)"
    contains "$T/err" "// kiln: tunable"
    contains "$T/err" "--proposer llm"
    [ ! -e "$T/res" ] || fail "a run directory was made: $(ls -R "$T/res" | head)"
    ;;
check)
    run_kiln "$T/out" "$T/err" workload check "$WL" --backend cpu
    expect_rc 0 "kiln workload check without a starting kernel"
    contains "$T/out" "SKIP  cpu: no starting kernel (kernel.c), the kernel part is skipped"
    contains "$T/out" "workload check passed"
    # With its kernel, the check says it is there instead.
    run_kiln "$T/out" "$T/err" workload check saxpy --backend cpu
    expect_rc 0 "kiln workload check saxpy"
    contains "$T/out" "ok    cpu: starting kernel kernel.c present"
    not_contains "$T/out" "SKIP"
    ;;
llm)
    python3 "$KILN_SOURCE_DIR/tests/orchestrator_llm/fake_server.py" "$T/port" &
    _kiln_bg_pids+=($!)
    wait_for 10 test -s "$T/port" || fail "the fake server did not start"
    url="http://127.0.0.1:$(cat "$T/port")/v1"
    KILN_API_KEY=sk-test run_kiln "$T/out" "$T/err" optimize "$WL" "${SHORT[@]}" \
        --proposer llm --model saxpy_mix --base-url "$url" --max-iterations 1 --results "$T/res"
    expect_rc 0 "kiln optimize --proposer llm without a starting kernel"
    run=$T/res/run-001
    expect_json "$run/history.json" '[h["status"] for h in d]' '["pass"]'
    expect_json "$run/summary.json" 'd["starting_kernel"]' None
    expect_json "$run/summary.json" 'd["reference_geomean_ms"]' None
    expect_json "$run/summary.json" 'd["best"]["candidate"]' 001
    expect_json "$run/summary.json" 'd["best"]["speedup_vs_reference"]' None
    [ ! -e "$run/workload/kernel.c" ] || fail "the run's workload copy gained a kernel.c"
    contains "$run/candidates/001/exchange.json" "There is no starting kernel"
    not_contains "$run/candidates/001/exchange.json" "Current best"
    contains "$T/out" "no starting kernel: speedups are not computed"
    not_contains "$T/out" "the starting kernel"
    contains "$run/report.html" "no starting kernel: speedups are not computed"
    [ -s "$run/best.c" ] || fail "best.c is missing"
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
echo ok
