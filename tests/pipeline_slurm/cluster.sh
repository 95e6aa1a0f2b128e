# cluster.sh - sourced by the Slurm tests after pipeline_cli/lib.sh: skips
# (77) where Slurm is missing or the test is not root, else starts a
# one-node Slurm (slurm-up.sh: two fake GPUs) under $T, stopped on exit,
# and sets $spool, SL=(--executor slurm --spool DIR), $T/slow-kiln (a
# node-side kiln that sleeps first: $KILN_TEST_NODE_DELAY, default 3 s, or
# in an array task $KILN_TEST_ARRAY_DELAY when set), wait_running and
# no_jobs_left.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for p in sbatch slurmctld slurmd munged mungekey; do
    command -v "$p" >/dev/null || { echo "SKIP: $p is not installed (apt-get install slurm-wlm munge; scripts/setup does)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: the one-node Slurm runs its daemons as root"; exit 77; }

chmod 755 "$T" # munged wants every directory above its socket searchable
export R=$T/cluster CTLD_PORT=$((20000 + $$ % 20000)) SLURMD_PORT=$((40000 + $$ % 20000))
bash "$here/slurm-up.sh" >"$T/up.log" 2>&1 || { cat "$T/up.log"; fail "the one-node Slurm did not start"; }
export SLURM_CONF=$R/etc/slurm.conf
trap 'bash "$here/slurm-down.sh" >/dev/null 2>&1; cleanup' EXIT
spool=$T/spool
mkdir -p "$spool"
SL=(--executor slurm --spool "$spool")

cat >"$T/slow-kiln" <<SH
#!/bin/sh
if [ -n "\${SLURM_ARRAY_TASK_ID:-}" ] && [ -n "\${KILN_TEST_ARRAY_DELAY:-}" ]; then
    sleep "\$KILN_TEST_ARRAY_DELAY"
else
    sleep "\${KILN_TEST_NODE_DELAY:-3}"
fi
exec "$KILN_BIN" "\$@"
SH
chmod 755 "$T/slow-kiln"

# wait_running NAME [PATTERN]: the id of the first RUNNING job named NAME
# whose id matches PATTERN (grep -E; default any), within 120 s.
wait_running()
{
    local i id
    for i in $(seq 1 1200); do
        id=$(squeue -h -r -n "$1" -t RUNNING -o %i | grep -E "${2:-.}" | head -1)
        [ -n "$id" ] && { echo "$id"; return 0; }
        sleep 0.1
    done
    return 1
}

# no_jobs_left NAME: nothing named NAME pending or running, within 5 s.
no_jobs_left()
{
    local i
    for i in $(seq 1 50); do
        [ -z "$(squeue -h -r -n "$1" -t PENDING,RUNNING -o %i)" ] && return 0
        sleep 0.1
    done
    return 1
}
