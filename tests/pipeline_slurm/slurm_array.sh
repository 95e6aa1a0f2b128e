#!/bin/bash
# slurm_array.sh - `kiln optimize --executor slurm` and `kiln resume
# --executor slurm` on a one-node Slurm this test starts (cluster.sh), cpu
# backend, saxpy, the embedded tuner (its proposals depend on the seed
# alone, not on --jobs or the executor). Cases, in order:
#   same      --jobs 3 through Slurm: the window's runs go out as one job
#             array and give the verdicts of the same run made locally;
#             one array task is killed mid-run, reported and resubmitted
#   cancel    SIGINT while the array runs: kiln exits 130, no kiln job left
#   resume    a Slurm run killed -9 after its first candidate; resume
#             --spool without --executor is refused, resume --executor
#             slurm finishes it through Slurm with the local verdicts
. "$(dirname "$0")/../pipeline_cli/lib.sh"
. "$(dirname "$0")/cluster.sh"

OPT=(optimize saxpy --backend cpu "${FAST[@]}" --max-iterations 4 --jobs 3)
history_of() { jq_py "$1/run-001/history.json" '[(h["candidate"], h["status"], h["stage"]) for h in d]'; }

# -- same: locally and through Slurm with one array task killed. The local
# run goes on meanwhile (the verdicts do not depend on timing): the Slurm
# run mostly waits (job latency, the node-side delay), and the two in turn
# were a third of the test's time.
"$KILN_BIN" "${OPT[@]}" --results "$T/res-local" --quiet >"$T/local.out" 2>"$T/local.err" &
lpid=$!
_kiln_bg_pids+=("$lpid")
"$KILN_BIN" "${OPT[@]}" --results "$T/res-slurm" "${SL[@]}" --slurm-kiln "$T/slow-kiln" \
    --slurm-array-limit 2 >"$T/out" 2>"$T/err" &
kpid=$!
_kiln_bg_pids+=("$kpid")
id=$(wait_running kiln-optimize '_1$') || fail "no array task 1 ran: $(tail -5 "$T/err")"
scancel --signal=KILL --full "$id"
wait "$kpid"
rc=$?
expect_rc 0 "kiln optimize --executor slurm with a task killed"
grep -Eq "slurm array job [0-9]+ submitted: 3 steps, at most 2 at once" "$T/err" ||
    fail "the window did not go out as one array of 3: $(grep slurm "$T/err")"
contains "$T/err" "slurm task $id ended"
contains "$T/err" "resubmitting once"
wait "$lpid"
lrc=$?
[ "$lrc" = 0 ] || { tail -n 40 "$T/local.err" >&2; fail "kiln optimize locally: exit status $lrc, expected 0"; }
expect_json "$T/res-local/run-001/run.json" 'd["executor"]' local
[ -n "$(history_of "$T/res-local")" ] || fail "no local history"
[ "$(history_of "$T/res-local")" = "$(history_of "$T/res-slurm")" ] ||
    fail "verdicts differ: local $(history_of "$T/res-local"), slurm $(history_of "$T/res-slurm")"
expect_json "$T/res-slurm/run-001/run.json" 'd["executor"]' slurm
echo "ok: a window through one job array gives the local verdicts; a killed task is resubmitted"

# -- cancel: SIGINT while the array runs.
# The reference and the baseline run first as plain jobs, without delay;
# the array's tasks wait 60 s, and SIGINT comes while they do.
# SIGINT at its default (sigint_default): a script's background job starts
# with it ignored.
KILN_TEST_NODE_DELAY=0 KILN_TEST_ARRAY_DELAY=60 sigint_default "$KILN_BIN" "${OPT[@]}" --results "$T/res-cancel" \
    "${SL[@]}" --slurm-kiln "$T/slow-kiln" >"$T/out" 2>"$T/err" &
kpid=$!
_kiln_bg_pids+=("$kpid")
id=$(wait_running kiln-optimize '_') || fail "no array task ran: $(tail -5 "$T/err")"
kill -INT "$kpid"
wait "$kpid"
rc=$?
expect_rc 130 "SIGINT during a job array"
no_jobs_left kiln-optimize || fail "kiln jobs still queued after SIGINT: $(squeue -h -r -o '%i %j %T')"
echo "ok: SIGINT cancels the array"

# -- resume: killed -9 after its first candidate, resumed through Slurm.
"$KILN_BIN" "${OPT[@]}" --jobs 1 --results "$T/res-resume" "${SL[@]}" >"$T/out" 2>"$T/err" &
kpid=$!
_kiln_bg_pids+=("$kpid")
run=$T/res-resume/run-001
wait_for 300 test -s "$run/candidates/001/verdict.json" || fail "no first candidate: $(tail -5 "$T/err")"
kill -9 "$kpid"
wait "$kpid" 2>/dev/null
scancel -n kiln-optimize
run_kiln "$T/out" "$T/err" resume "$run" --spool "$spool"
expect_rc 2 "resume --spool without --executor"
contains "$T/err" "need --executor slurm"
run_kiln "$T/out" "$T/err" resume "$run" "${SL[@]}"
expect_rc 0 "kiln resume --executor slurm"
contains "$T/err" "slurm"
expect_json "$run/history.json" 'len(d)' 4
[ "$(history_of "$T/res-local")" = "$(history_of "$T/res-resume")" ] ||
    fail "resumed verdicts differ: local $(history_of "$T/res-local"), resumed $(history_of "$T/res-resume")"
echo "ok: resume --executor slurm finishes a run through Slurm"
