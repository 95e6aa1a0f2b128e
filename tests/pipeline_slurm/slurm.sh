#!/bin/bash
# slurm.sh SHARED_WORK - `kiln eval --executor slurm` on a one-node Slurm
# (slurm-wlm + munge, no systemd, two fake GPUs) that this test starts and
# stops itself. The cpu backend's harness runs as Slurm jobs; the trusted
# parent stays here. Cases, in order, on one cluster:
#   same      a batch of candidates gives the same verdicts as local runs
#   refused   a job sbatch refuses is named (unknown partition)
#   killed    a job killed mid-run is reported and resubmitted once
#   cancel    SIGINT cancels the job (scancel) and kiln exits 130
. "$(dirname "$0")/../pipeline_cli/lib.sh"
shared=$1
. "$(dirname "$0")/cluster.sh"

# The shared inputs of the eval tests (fixture pipeline_eval_pass).
[ -d "$shared/inputs" ] || fail "$shared/inputs is missing (the pipeline_eval_pass fixture did not run)"
work_for() { rm -rf "$T/w-$1" && mkdir -p "$T/w-$1" && cp -a "$shared/inputs" "$T/w-$1/inputs"; }
eval_args() { echo eval saxpy "$1" --backend cpu --warmups 1 --iterations 5 --no-reference --no-baseline --json; }

# -- same: the same verdicts through Slurm as locally.
for f in "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" "$FIX/saxpy_wrong.c" "$FIX/saxpy_segv.c"; do
    n=$(basename "$f" .c)
    [ -f "$f" ] || fail "missing fixture $f"
    work_for "$n-l"
    work_for "$n-s"
    # The local run goes on while the Slurm job is queued and runs.
    "$KILN_BIN" $(eval_args "$f") --work "$T/w-$n-l" --seed 7 >"$T/$n.local" 2>"$T/$n.lerr" &
    lpid=$!
    _kiln_bg_pids+=("$lpid")
    run_kiln "$T/$n.slurm" "$T/err" $(eval_args "$f") --work "$T/w-$n-s" --seed 7 "${SL[@]}"
    wait "$lpid"
    lrc=$?
    [ "$rc" = "$lrc" ] || { cat "$T/err"; fail "$n: exit status $rc through Slurm, $lrc locally"; }
    for e in 'd["status"]' '[(c["case"], c["set"], c["correct"]) for c in d["cases"]]' 'd.get("held_out")'; do
        [ -n "$(jq_py "$T/$n.local" "$e")" ] || fail "$n: $e is not in the local verdict"
        [ "$(jq_py "$T/$n.local" "$e")" = "$(jq_py "$T/$n.slurm" "$e")" ] ||
            fail "$n: $e differs: local $(jq_py "$T/$n.local" "$e"), slurm $(jq_py "$T/$n.slurm" "$e")"
    done
    expect_json "$T/$n.slurm" 'd["ran_as"].startswith("slurm job ")' True
    expect_json "$T/$n.local" 'd["ran_as"]' None
    contains "$T/err" "slurm job"
done
echo "ok: same verdicts locally and through Slurm"

# -- refused: an unknown partition is named.
work_for refused
run_kiln "$T/out" "$T/err" $(eval_args "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c") \
    --work "$T/w-refused" "${SL[@]}" --partition nosuchpartition
expect_rc 2 "a job sbatch refuses"
contains "$T/err" "the job was refused"
contains "$T/err" "nosuchpartition"
echo "ok: a refused job is named"

# -- killed: the first job is killed mid-run; kiln says so, resubmits, passes.
work_for killed
"$KILN_BIN" $(eval_args "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c") --work "$T/w-killed" \
    "${SL[@]}" --slurm-kiln "$T/slow-kiln" >"$T/out" 2>"$T/err" &
kpid=$!
_kiln_bg_pids+=("$kpid")
id=$(wait_running kiln-eval) || fail "no kiln-eval job started"
scancel --signal=KILL --full "$id"
wait "$kpid"
rc=$?
expect_rc 0 "a job killed mid-run, resubmitted"
contains "$T/err" "slurm job $id ended"
contains "$T/err" "resubmitting once"
expect_json "$T/out" 'd["status"]' pass
echo "ok: a killed job is reported and resubmitted"

# -- cancel: SIGINT while the job runs: scancel, exit 130, no job left.
work_for cancel
# A background job of a script starts with SIGINT ignored, and kiln keeps
# an ignored signal ignored (cli_catch_stop): start it as a terminal would.
KILN_TEST_NODE_DELAY=60 sigint_default \
    "$KILN_BIN" $(eval_args "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c") \
    --work "$T/w-cancel" "${SL[@]}" --slurm-kiln "$T/slow-kiln" >"$T/out" 2>"$T/err" &
kpid=$!
_kiln_bg_pids+=("$kpid")
id=$(wait_running kiln-eval) || fail "no kiln-eval job started"
kill -INT "$kpid"
wait "$kpid"
rc=$?
expect_rc 130 "SIGINT during a Slurm job"
contains "$T/err" "cancelled"
no_jobs_left kiln-eval || fail "job $id still queued after SIGINT"
echo "ok: SIGINT cancels the job"
