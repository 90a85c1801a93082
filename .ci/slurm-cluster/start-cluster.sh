#!/usr/bin/env bash
# start-cluster.sh - start a private SLURM 22.05 test cluster on ONE host (Debian bookworm)
# without systemd: munged + [mariadbd + slurmdbd] + slurmctld + N x slurmd,
# all state, logs, sockets and pid files under $SLURM_TEST_DIR.
#
# Idempotent: if the daemons of this state dir are already up and the nodes are
# usable, it only prints the environment line and exits 0.
#
# Environment knobs (all optional):
#   SLURM_TEST_DIR      state dir                                  (default /tmp/nel-slurm-test)
#   SLURM_NODES         node names (one slurmd each) on this host  (default 1)
#                       Heterogeneous jobs need >= one node per component (backfill limitation).
#                       Debian's slurmd is built without --enable-multiple-slurmd, so each node
#                       gets NodeHostname=nodeN + its own Port; nodeN is appended to /etc/hosts
#                       (127.0.0.1) unless SLURM_EDIT_HOSTS=0.
#   SLURM_FAKE_CPUS     CPUs advertised per node (default: nproc). May exceed the real count:
#                       SlurmdParameters=config_overrides keeps the node from draining.
#   SLURM_FAKE_GPUS     fake gres/gpu per node (default 4; 0 = no GRES). Device files are
#                       symlinks to /dev/null; CUDA_VISIBLE_DEVICES etc. are set normally.
#   SLURM_ACCOUNTING=1  also start MariaDB + slurmdbd so that sacct works (needs packages
#                       slurmdbd mariadb-server; adds ~2 s to the start)
#   SLURM_CTLD_PORT     slurmctld port (default 6817); slurmd ports start at SLURM_D_PORT
#                       (default 6818, one per node); slurmdbd SLURM_DBD_PORT (6809); MariaDB SLURM_DB_PORT (3307)
#   SLURM_PLUGSTACK     path of a SPANK plugin .so to load (e.g. pyxis-shim/pyxis_shim.so, which
#                       makes srun/sbatch accept the pyxis --container-* flags without running
#                       containers); written to $D/etc/plugstack.conf
#   SLURM_PARTITIONS    space-separated partition names, each over every node; the first is the
#                       default (default "debug")
#   SLURM_ACCOUNTS      with SLURM_ACCOUNTING=1: space-separated accounts that root may use (the
#                       first is its default); associations are then enforced, so a job with any
#                       other --account is refused at submission (default: none, nothing enforced)
#   SLURM_INSTALL=1     apt-get install missing packages first
#   SLURM_START_TIMEOUT seconds to wait for the nodes to become idle (default 60)
#
# Clients need:  export SLURM_CONF=$SLURM_TEST_DIR/etc/slurm.conf   (also written to $D/env.sh,
# and printed on stdout). Stop with stop-cluster.sh (same SLURM_TEST_DIR).
set -euo pipefail

D=${SLURM_TEST_DIR:-/tmp/nel-slurm-test}
D=$(mkdir -p "$D" && cd "$D" && pwd)
NNODES=${SLURM_NODES:-1}
FAKE_GPUS=${SLURM_FAKE_GPUS:-4}
ACCT=${SLURM_ACCOUNTING:-0}
CTLD_PORT=${SLURM_CTLD_PORT:-6817}
D_PORT=${SLURM_D_PORT:-6818}
DBD_PORT=${SLURM_DBD_PORT:-6809}
DB_PORT=${SLURM_DB_PORT:-3307}
TIMEOUT=${SLURM_START_TIMEOUT:-60}
read -r -a PARTITIONS <<<"${SLURM_PARTITIONS:-debug}"
read -r -a ACCOUNTS <<<"${SLURM_ACCOUNTS:-}"
CONF=$D/etc/slurm.conf
export SLURM_CONF=$CONF
t0=$(date +%s.%N)
HERE=$(cd "$(dirname "$0")" && pwd)

log() { echo "[start-cluster] $*" >&2; }
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}'; }
node_states() { sinfo -h -N -o '%T' 2>/dev/null | sort -u | tr '\n' ' '; }

# ---- 0. packages -------------------------------------------------------------
need=()
for b in slurmctld slurmd sinfo munged; do command -v "$b" >/dev/null || need+=("$b"); done
if [ "$ACCT" = 1 ]; then for b in slurmdbd mariadbd; do command -v "$b" >/dev/null || need+=("$b"); done; fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "${SLURM_INSTALL:-0}" = 1 ]; then
    pkgs=(slurmctld slurmd slurm-client munge); [ "$ACCT" = 1 ] && pkgs+=(slurmdbd mariadb-server)
    log "installing: ${pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  else
    log "missing ${need[*]}; set SLURM_INSTALL=1 or apt-get install slurm-wlm munge"; exit 2
  fi
fi

# ---- 1. already running? -----------------------------------------------------
running=1
for f in munged slurmctld $(seq -f 'slurmd-node%g' 1 "$NNODES"); do alive "$D/run/$f.pid" || running=0; done
if [ "$running" = 1 ]; then
  st=$(node_states)
  case "$st" in
    *down*|*drain*|*unk*|*fail*|"") log "daemons alive but node state '$st'; restarting";;
    *) log "already running ($st)"; echo "export SLURM_CONF=$CONF"; exit 0;;
  esac
fi
# stop leftovers of a previous (half-)started cluster in this dir, by PID file only
SLURM_TEST_DIR=$D "$HERE/stop-cluster.sh" >/dev/null 2>&1 || true

# ---- 2. state dir + config ---------------------------------------------------
mkdir -p "$D"/{etc,run,log,state,munge,dev}
chmod 755 "$D/munge"          # socket dir must be reachable by job users; key stays 0400
for i in $(seq 1 "$NNODES"); do mkdir -p "$D/spool/node$i"; done
[ -s "$D/munge/munge.key" ] || { dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none; chmod 400 "$D/munge/munge.key"; }

CPUS=${SLURM_FAKE_CPUS:-$(nproc)}
# RealMemory above what slurmd detects drains the node: use 90% of MemTotal
MEM_MB=$(awk '/MemTotal/ {printf "%d", $2/1024*0.9}' /proc/meminfo)

GRES_TYPES=""; GRES_NODE=""
if [ "$FAKE_GPUS" -gt 0 ]; then
  GRES_TYPES="GresTypes=gpu"; GRES_NODE="Gres=gpu:$FAKE_GPUS"
  for i in $(seq 0 $((FAKE_GPUS-1))); do ln -sfn /dev/null "$D/dev/nvidia$i"; done  # must be a char device
  printf 'AutoDetect=off\nName=gpu File=%s/dev/nvidia[0-%d]\n' "$D" $((FAKE_GPUS-1)) > "$D/etc/gres.conf"
fi

NODELINES=""; NODELIST=""
for i in $(seq 1 "$NNODES"); do
  if [ "$NNODES" -gt 1 ]; then nh=node$i; else nh=localhost; fi
  NODELINES+="NodeName=node$i NodeHostname=$nh NodeAddr=127.0.0.1 Port=$((D_PORT+i-1)) CPUs=$CPUS Sockets=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=$MEM_MB $GRES_NODE State=UNKNOWN"$'\n'
  NODELIST+="${NODELIST:+,}node$i"
done

if [ "$ACCT" = 1 ]; then
  ACCT_LINES="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# munge socket for the slurmctld/client -> slurmdbd connection (AuthInfo is not used for it)
AccountingStoragePass=socket=$D/munge/munge.socket.2
JobAcctGatherType=jobacct_gather/none"
  if [ ${#ACCOUNTS[@]} -gt 0 ]; then ACCT_LINES+=$'\n'"AccountingStorageEnforce=associations"; fi
else
  ACCT_LINES="# no slurmdbd: sacct fails ('Slurm accounting storage is disabled'); squeue/scontrol work
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
fi

cat > "$CONF" <<EOF
# generated by start-cluster.sh - private test cluster, do not edit
ClusterName=testcluster
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$D_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also sets how long a requeued job waits before it may start again (default 120 s, min 5)
AuthInfo=socket=$D/munge/munge.socket.2,cred_expire=10
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
$ACCT_LINES
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
# keep finished jobs visible to scontrol/squeue -t all for an hour
MinJobAge=3600
KillWait=5
OverTimeLimit=0
InactiveLimit=0
SchedulerType=sched/backfill
# schedule on submit without the default 3 s batch delay; backfill (needed for hetjobs) every 1 s
SchedulerParameters=batch_sched_delay=0,sched_interval=1,bf_interval=1
MaxArraySize=10001
$GRES_TYPES
${NODELINES}$(for i in "${!PARTITIONS[@]}"; do
  def=NO; [ "$i" = 0 ] && def=YES
  echo "PartitionName=${PARTITIONS[$i]} Nodes=$NODELIST Default=$def MaxTime=INFINITE State=UP OverSubscribe=NO"
done)
EOF
printf 'export SLURM_CONF=%s\n' "$CONF" > "$D/env.sh"
# plugstack.conf is looked up next to slurm.conf (Debian's /etc/slurm/plugstack.conf is not used)
if [ -n "${SLURM_PLUGSTACK:-}" ]; then echo "optional $SLURM_PLUGSTACK" > "$D/etc/plugstack.conf"; else rm -f "$D/etc/plugstack.conf"; fi

# node names must resolve for scripts that connect to `scontrol show hostnames` output
if [ "$NNODES" -gt 1 ] && [ "${SLURM_EDIT_HOSTS:-1}" = 1 ]; then
  for i in $(seq 1 "$NNODES"); do
    getent hosts "node$i" >/dev/null || echo "127.0.0.1 node$i  # slurm test cluster" >> /etc/hosts
  done
fi

# ---- 3. daemons ----------------------------------------------------------------
munged --socket="$D/munge/munge.socket.2" --key-file="$D/munge/munge.key" \
       --pid-file="$D/run/munged.pid" --log-file="$D/log/munged.log" \
       --seed-file="$D/munge/munged.seed" --force
for _ in $(seq 1 50); do [ -S "$D/munge/munge.socket.2" ] && break; sleep 0.1; done

if [ "$ACCT" = 1 ]; then
  DB=$D/mysql
  if [ ! -d "$DB/mysql" ]; then
    mariadb-install-db --no-defaults --datadir="$DB" --user=root \
      --auth-root-authentication-method=socket --skip-test-db > "$D/log/mariadb-install.log" 2>&1
  fi
  setsid mariadbd --no-defaults --datadir="$DB" --user=root --socket="$D/run/mysqld.sock" \
    --port="$DB_PORT" --bind-address=127.0.0.1 --pid-file="$D/run/mariadbd.pid" \
    --log-error="$D/log/mariadbd.log" --innodb-buffer-pool-size=64M </dev/null >/dev/null 2>&1 &
  for _ in $(seq 1 200); do
    mariadb --no-defaults -S "$D/run/mysqld.sock" -u root -e 'select 1' >/dev/null 2>&1 && break; sleep 0.1
  done
  mariadb --no-defaults -S "$D/run/mysqld.sock" -u root -e "
    CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmtest';
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmtest';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  # slurmdbd.conf is looked up next to $SLURM_CONF and must be 0600, owned by SlurmUser
  cat > "$D/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.socket.2
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$D/run/slurmdbd.pid
LogFile=$D/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurmtest
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$D/etc/slurmdbd.conf"
  slurmdbd
  for _ in $(seq 1 100); do timeout 5 sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.1; done
  timeout 10 sacctmgr -i -Q add cluster testcluster >/dev/null 2>&1 || true
  if [ ${#ACCOUNTS[@]} -gt 0 ]; then
    timeout 10 sacctmgr -i -Q add account "$(IFS=,; echo "${ACCOUNTS[*]}")" cluster=testcluster >/dev/null 2>&1 || true
    timeout 10 sacctmgr -i -Q add user root account="$(IFS=,; echo "${ACCOUNTS[*]}")" defaultaccount="${ACCOUNTS[0]}" >/dev/null 2>&1 || true
  fi
fi

# -c: clear saved job/node state (fresh queue each start)
slurmctld -c -f "$CONF"
for i in $(seq 1 "$NNODES"); do slurmd -f "$CONF" -N "node$i"; done

# ---- 4. wait for the nodes to be idle --------------------------------------------
deadline=$(( $(date +%s) + TIMEOUT ))
while :; do
  st=$(node_states)
  [ "$st" = "idle " ] && break
  if [ "$(date +%s)" -ge "$deadline" ]; then
    log "nodes not idle after ${TIMEOUT}s (state: '$st')"; tail -n 5 "$D"/log/*.log >&2; exit 1
  fi
  sleep 0.1
done
log "cluster up in $(elapsed)s: $(sinfo -h -o '%P %a %D %T %N')$( [ "$ACCT" = 1 ] && echo ' (+slurmdbd)')"
echo "export SLURM_CONF=$CONF"
