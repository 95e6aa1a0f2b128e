#!/bin/bash
# From the team's tested recipe (shared/slurm/), kept here so the tests need nothing
# outside the repository. Ports come from CTLD_PORT/SLURMD_PORT.
# Bring up a throwaway single-node Slurm cluster under $R (no systemd needed). Run as root.
set -euo pipefail
R=${R:-/tmp/slurm-ci/cluster}
H=$(hostname -s); N=$(nproc)
M=$(free -m | awk '/^Mem:/{print int($2*0.9)}')
NGPU=${NGPU:-2}
# free_port WANTED: WANTED when nothing listens or connects from it, else
# one the kernel says is free now. The tests derive ports from pids, and
# those can land on a port in use: slurmctld then dies and the node never
# turns idle (seen once in CI).
free_port() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind(("0.0.0.0", int(sys.argv[1])))
except OSError:
    s.close(); s = socket.socket(); s.bind(("0.0.0.0", 0))
print(s.getsockname()[1])
PY
}
CTLD_PORT=$(free_port "${CTLD_PORT:-6817}")
SLURMD_PORT=$(free_port "${SLURMD_PORT:-6818}")
[ "$CTLD_PORT" != "$SLURMD_PORT" ] || SLURMD_PORT=$(free_port 0)
rm -rf "$R"; mkdir -p "$R"/{etc,munge,run,log,spool/ctld,spool/d,fakedev}
chmod 755 "$R" "$R/run" "$R/munge"          # munged: socket dir must be o+x, key dir not o+w
mungekey --create --keyfile="$R/munge/munge.key" --bits=1024   # file ends up 0600 root
for i in $(seq 0 $((NGPU-1))); do ln -s /dev/null "$R/fakedev/nvidia$i"; done  # fake GPU "char devices"

cat > "$R/etc/slurm.conf" <<EOC
ClusterName=ci
SlurmctldHost=$H(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$R/run/munge.sock
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
StateSaveLocation=$R/spool/ctld
SlurmdSpoolDir=$R/spool/d
SlurmctldPidFile=$R/run/slurmctld.pid
SlurmdPidFile=$R/run/slurmd.pid
SlurmctldLogFile=$R/log/slurmctld.log
SlurmdLogFile=$R/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$R/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
GresTypes=gpu
NodeName=$H NodeAddr=127.0.0.1 CPUs=$N RealMemory=$M Gres=gpu:fake:$NGPU State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOC
cat > "$R/etc/gres.conf" <<EOC
AutoDetect=off
NodeName=$H Name=gpu Type=fake File=$R/fakedev/nvidia[0-$((NGPU-1))]
EOC
export SLURM_CONF=$R/etc/slurm.conf
munged --key-file="$R/munge/munge.key" --socket="$R/run/munge.sock" \
  --pid-file="$R/run/munged.pid" --seed-file="$R/munge/munged.seed" \
  --log-file="$R/log/munged.log"                      # daemonizes itself, writes pid file
setsid slurmctld -D >"$R/log/slurmctld.out" 2>&1 < /dev/null &
ctld=$!
setsid slurmd -D    >"$R/log/slurmd.out"    2>&1 < /dev/null &
sd=$!
# A loaded CI host can take far longer than the usual second: wait up to a
# minute, but stop at once when a daemon has died, and show why.
for i in $(seq 1 600); do
  [ "$(sinfo -h -n "$H" -o %T 2>/dev/null)" = idle ] && break
  kill -0 "$ctld" 2>/dev/null || { echo "slurmctld exited"; break; }
  kill -0 "$sd" 2>/dev/null || { echo "slurmd exited"; break; }
  sleep 0.1
done
sinfo -h -n "$H" -o %T 2>&1 | grep -qx idle || {
  echo "node not idle (state: $(sinfo -h -n "$H" -o %T 2>&1); ports $CTLD_PORT, $SLURMD_PORT)"
  tail -n 20 "$R"/log/*.log "$R"/log/*.out; exit 1; }
echo "export SLURM_CONF=$SLURM_CONF"
