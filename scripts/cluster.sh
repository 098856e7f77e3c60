#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for the tests marked `cluster`
# (make test-cluster) and for trying `geobench run --executor slurm` by hand:
#
#   bash scripts/cluster.sh start   # install what is missing, start the daemons, wait for the node
#   export SLURM_CONF=/tmp/geobench-slurm/etc/slurm.conf
#   bash scripts/cluster.sh stop    # cancel the jobs left, stop every daemon this script started
#
# Runs as root, without systemd or cgroups: munge, MariaDB, slurmdbd (so that sacct answers),
# slurmctld and slurmd, from Debian's packages, each started by hand with its pid, config, logs
# and state under GEOBENCH_CLUSTER_DIR (default /tmp/geobench-slurm). The node has this
# machine's CPUs and memory (slurmd -C).
set -euo pipefail

DIR=${GEOBENCH_CLUSTER_DIR:-/tmp/geobench-slurm}
DB_PORT=${GEOBENCH_CLUSTER_DB_PORT:-3316}
DBD_PORT=6819
PACKAGES="munge slurm-client slurmctld slurmd slurmdbd mariadb-server mariadb-client"
export SLURM_CONF=$DIR/etc/slurm.conf

say() { echo "cluster: $*" >&2; }
stamp() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(stamp)" 'BEGIN {printf "%.1f s", b - a}'; }

wait_for() {  # wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds, or fail naming WHAT
  local limit=$1 what=$2 end
  shift 2
  end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) > end )); then
      say "$what did not come up in ${limit} s; its log:"
      tail -n 20 "$DIR/log/$what.log" >&2 2>/dev/null || true
      return 1
    fi
    sleep 0.5
  done
}

install() {
  local t0 missing=""
  for cmd in munged slurmctld slurmd slurmdbd sbatch sacct mariadbd mariadb; do
    command -v "$cmd" >/dev/null || missing=yes
  done
  [[ -z $missing ]] && return 0
  t0=$(stamp)
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PACKAGES \
    >/dev/null
  say "installed $PACKAGES in $(since "$t0")"
}

write_configs() {
  local node host
  node=$(slurmd -C | head -n 1 | sed 's/ UpTime=.*//')
  host=$(hostname -s)
  mkdir -p "$DIR"/{etc,run,log,state,spool,munge}
  chmod 755 "$DIR"
  cat > "$DIR/etc/slurm.conf" <<EOF
ClusterName=geobench
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
ReturnToService=2
KillWait=5
InactiveLimit=0
MinJobAge=300
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  cat > "$DIR/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=geobench
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$DIR/etc/slurmdbd.conf"
}

start_munge() {
  [[ -f $DIR/munge/munge.key ]] || { dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 \
    status=none; chmod 400 "$DIR/munge/munge.key"; }
  mkdir -p /run/munge  # the clients (sacctmgr among them) know no other socket
  munged --force --key-file="$DIR/munge/munge.key" --socket=/run/munge/munge.socket.2 \
    --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
    --seed-file="$DIR/munge/munge.seed"
  wait_for 20 munged munge -S /run/munge/munge.socket.2 -n
}

start_mariadb() {  # its pid and error log in a folder its own user owns, or it dies silently
  local db=$DIR/mysql
  mkdir -p "$db/data" "$db/run"
  chown -R mysql:mysql "$db"
  if [[ ! -d $db/data/mysql ]]; then
    mariadb-install-db --user=mysql --datadir="$db/data" --skip-test-db >"$DIR/log/mariadb-install.log" 2>&1
  fi
  setsid mariadbd --user=mysql --datadir="$db/data" --socket="$db/run/mysqld.sock" \
    --pid-file="$db/run/mysqld.pid" --log-error="$db/run/error.log" --port="$DB_PORT" \
    --bind-address=127.0.0.1 --skip-log-bin --innodb-buffer-pool-size=32M \
    </dev/null >/dev/null 2>&1 &
  ln -sf "$db/run/error.log" "$DIR/log/mariadb.log"
  wait_for 60 mariadb mariadb --socket="$db/run/mysqld.sock" -e "SELECT 1"
  mariadb --socket="$db/run/mysqld.sock" -e "
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'geobench';
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'geobench';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}

start_slurm() {
  slurmdbd
  wait_for 60 slurmdbd sacctmgr -n list cluster
  sacctmgr -i -Q add cluster geobench >/dev/null 2>&1 || true
  slurmctld
  wait_for 60 slurmctld scontrol ping
  slurmd
  wait_for 90 slurmd node_idle
}

node_idle() { sinfo -h -N -o %T | grep -qx idle; }

start() {
  local t0
  if [[ -f $DIR/run/slurmctld.pid ]] && kill -0 "$(cat "$DIR/run/slurmctld.pid")" 2>/dev/null; then
    say "already running (SLURM_CONF=$SLURM_CONF)"
    return 0
  fi
  install
  t0=$(stamp)
  write_configs
  start_munge
  start_mariadb
  start_slurm
  say "started in $(since "$t0"): $(sinfo -h -N -o '%N %T, %c CPUs, %m MB')"
  say "export SLURM_CONF=$SLURM_CONF"
}

stop_pid() {  # stop_pid NAME PIDFILE: TERM, then KILL after 20 s
  local name=$1 file=$2 pid
  [[ -f $file ]] || return 0
  pid=$(cat "$file")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    say "stopped $name (pid $pid)"
  fi
  rm -f "$file"
}

stop() {
  if [[ -f $DIR/run/slurmctld.pid ]] && scontrol ping >/dev/null 2>&1; then
    scancel --quiet --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 30); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 1; done
  fi
  stop_pid slurmd "$DIR/run/slurmd.pid"
  stop_pid slurmctld "$DIR/run/slurmctld.pid"
  stop_pid slurmdbd "$DIR/run/slurmdbd.pid"
  stop_pid mariadbd "$DIR/mysql/run/mysqld.pid"
  stop_pid munged "$DIR/run/munged.pid"
}

if [[ $(id -u) != 0 ]]; then
  say "runs as root (it installs packages and starts the daemons as root); see docs/scaling.md"
  exit 1
fi

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
