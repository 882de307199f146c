#!/usr/bin/env bash
# A real Slurm cluster on this one machine: munged, slurmctld and N slurmd (virtual nodes n1..nN
# on 127.0.0.1). Facts behind each line: ../shared/recipes/slurm-cluster.md.
#
#   tests/services/slurm.sh start    install if missing, start, wait until every node is idle,
#                                    print `export SLURM_CONF=...` and write it to $STATE/env
#                                    (idempotent: a running cluster is reused)
#   tests/services/slurm.sh status   exit 0 when every daemon it started is alive; show sinfo
#   tests/services/slurm.sh stop     stop exactly the daemons it started (by pid), remove the state
#
# Settings (environment):
#   SLURM_STATE_DIR        where conf, pids, spool and logs live [${TMPDIR:-/tmp}/rig-dossier-slurm]
#   SLURM_NODE_COUNT       virtual nodes [3]
#   SLURM_CPUS_PER_NODE    CPUs each node declares [2]
#   SLURM_GPUS_PER_NODE    fake GPUs (gres backed by mknod character devices, not real GPUs) [2]:
#                          a job's --gpus reach its prolog as SLURM_JOB_GPUS (tests/check/test_check_prolog_slurm.py)
#   SLURM_CTLD_PORT        slurmctld port [16817]; slurmd ports are 17001..1700N
set -euo pipefail

STATE=${SLURM_STATE_DIR:-${TMPDIR:-/tmp}/rig-dossier-slurm}
NODES=${SLURM_NODE_COUNT:-3}
CPUS=${SLURM_CPUS_PER_NODE:-2}
GPUS=${SLURM_GPUS_PER_NODE:-2}
CTLD_PORT=${SLURM_CTLD_PORT:-16817}
CONF=$STATE/slurm.conf
PIDS=$STATE/started.pids   # "name pid" per line: only what this script started

log() { echo "slurm.sh: $*" >&2; }

node_names() { local i; for ((i = 1; i <= NODES; i++)); do echo "n$i"; done; }

install_if_missing() {
  local missing=()
  for cmd in slurmctld slurmd sbatch munged; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing slurmctld slurmd slurm-client munge (missing: ${missing[*]})"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends \
           slurmctld slurmd slurm-client munge >/dev/null; }
}

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

all_started_alive() {
  [ -s "$PIDS" ] || return 1
  local name pid
  while read -r name pid; do pid_alive "$pid" || return 1; done <"$PIDS"
}

write_conf() {
  local last=$((17000 + NODES)) gres_line="" node_gres=""
  if [ "$GPUS" -gt 0 ]; then
    gres_line="GresTypes=gpu"
    node_gres="Gres=gpu:$GPUS"
  fi
  cat >"$CONF" <<CONF
# Written by tests/services/slurm.sh: $NODES virtual nodes on this host.
ClusterName=rigdossier
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$STATE/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
DefMemPerCPU=500
ReturnToService=2
MinJobAge=600
StateSaveLocation=$STATE/ctld
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdSpoolDir=$STATE/d-%n
SlurmdPidFile=$STATE/slurmd-%n.pid
SlurmdLogFile=$STATE/log/slurmd-%n.log
$gres_line
NodeName=n[1-$NODES] NodeHostname=localhost NodeAddr=127.0.0.1 Port=17001-$last CPUs=$CPUS RealMemory=4000 $node_gres State=UNKNOWN
PartitionName=debug Nodes=n[1-$NODES] Default=YES MaxTime=INFINITE State=UP
CONF
  if [ "$GPUS" -gt 0 ]; then
    local i files=()
    for ((i = 0; i < GPUS; i++)); do
      [ -e "$STATE/dev/gpu$i" ] || mknod "$STATE/dev/gpu$i" c 1 3  # /dev/null's numbers: not a GPU
      files+=("$STATE/dev/gpu$i")
    done
    printf 'AutoDetect=off\nNodeName=n[1-%s] Name=gpu File=%s/dev/gpu[0-%s]\n' \
      "$NODES" "$STATE" "$((GPUS - 1))" >"$STATE/gres.conf"
  else
    rm -f "$STATE/gres.conf"
  fi
}

record() { echo "$1 $2" >>"$PIDS"; }

wait_for_pidfile() {  # daemons fork; their pid file appears once they are up
  local file=$1 i
  for ((i = 0; i < 100; i++)); do
    [ -s "$file" ] && pid_alive "$(cat "$file")" && return 0
    sleep 0.1
  done
  return 1
}

start_daemons() {
  # Our own munged on a private socket: never touches (or depends on) a system munged.
  mkdir -p "$STATE/munge"
  chown munge:munge "$STATE/munge"
  chmod 0755 "$STATE/munge"  # munged wants the socket directory searchable by all
  runuser -u munge -- /usr/sbin/munged --socket="$STATE/munge/munge.socket" \
    --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" \
    --seed-file="$STATE/munge/munged.seed"
  wait_for_pidfile "$STATE/munge/munged.pid" || { log "munged did not start"; return 1; }
  record munged "$(cat "$STATE/munge/munged.pid")"

  slurmctld -f "$CONF" -i
  wait_for_pidfile "$STATE/slurmctld.pid" || { log "slurmctld did not start: $STATE/log/slurmctld.log"; return 1; }
  record slurmctld "$(cat "$STATE/slurmctld.pid")"

  local node
  for node in $(node_names); do
    mkdir -p "$STATE/d-$node"
    slurmd -f "$CONF" -N "$node"
    wait_for_pidfile "$STATE/slurmd-$node.pid" || { log "slurmd $node did not start: $STATE/log/slurmd-$node.log"; return 1; }
    record "slurmd-$node" "$(cat "$STATE/slurmd-$node.pid")"
  done
}

wait_until_idle() {
  local i states
  for ((i = 0; i < 300; i++)); do
    states=$(SLURM_CONF=$CONF sinfo -h -N -o '%T' 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$states" = "idle " ] && return 0
    sleep 0.1
  done
  log "nodes not idle after 30 s (states: ${states:-none}); logs in $STATE/log"
  return 1
}

start() {
  if all_started_alive; then
    log "already running ($STATE)"
  else
    [ -e "$PIDS" ] && stop
    install_if_missing
    mkdir -p "$STATE/log" "$STATE/ctld" "$STATE/dev"
    : >"$PIDS"
    write_conf
    start_daemons || { stop; exit 1; }
  fi
  wait_until_idle || { stop; exit 1; }
  echo "export SLURM_CONF=$CONF" >"$STATE/env"  # tests/services/with-services.sh sources this
  echo "export SLURM_CONF=$CONF"
}

stop() {
  [ -f "$PIDS" ] || { log "nothing started here ($STATE)"; return 0; }
  local name pid i
  # slurmd first, munged last: daemons stop cleanly while authentication still works
  while read -r name pid; do
    pid_alive "$pid" && kill -TERM "$pid" 2>/dev/null || true
  done < <(tac "$PIDS")
  while read -r name pid; do
    for ((i = 0; i < 100; i++)); do pid_alive "$pid" || break; sleep 0.1; done
    if pid_alive "$pid"; then log "$name ($pid) ignored SIGTERM: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  done <"$PIDS"
  rm -rf "$STATE"
  log "stopped"
}

status() {
  if all_started_alive; then
    SLURM_CONF=$CONF sinfo -N
    echo "export SLURM_CONF=$CONF"
  else
    log "not running ($STATE)"
    return 1
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 {start|stop|status}" >&2; exit 2 ;;
esac
