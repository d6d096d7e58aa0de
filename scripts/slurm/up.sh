#!/usr/bin/env bash
# Bring up a throwaway Slurm cluster on this machine for wick's tests: munged,
# slurmctld and two slurmd "virtual nodes" (node1, node2) on 127.0.0.1, from Debian's
# packages (slurmctld slurmd slurm-client munge), started without systemd. Two nodes,
# because a heterogeneous job (wick submits one component per replica) never starts
# when all its components must share one node. Stop it with scripts/slurm/down.sh.
#
# With WICK_SLURM_ACCOUNTING=1 it also starts MariaDB and slurmdbd (packages slurmdbd
# and mariadb-server), so that sacct works; WICK_SLURM_MIN_JOB_AGE (default 300) is how
# long slurmctld keeps a finished job before purging it.
#
# Everything but the config lives under $WICK_SLURM_ROOT (default /tmp/wick-slurm):
# state, spool, logs and pid files. The config goes to /etc/slurm/slurm.conf, where
# sbatch, squeue and the daemons look for it; a slurm.conf this script did not write
# is never overwritten. Needs root. Idempotent: a running cluster is left alone.
set -euo pipefail

ROOT="${WICK_SLURM_ROOT:-/tmp/wick-slurm}"
ACCOUNTING="${WICK_SLURM_ACCOUNTING:-0}"
MIN_JOB_AGE="${WICK_SLURM_MIN_JOB_AGE:-300}"
CONF=/etc/slurm/slurm.conf
DBDCONF=/etc/slurm/slurmdbd.conf
MARK="# written by wick scripts/slurm/up.sh"

die() { echo "slurm-up: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (it starts munged, slurmctld and slurmd)"
for cmd in munged slurmctld slurmd sbatch scontrol sinfo; do
  command -v "$cmd" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$cmd" >/dev/null 2>&1 ||
    die "$cmd not found: apt-get install -y slurmctld slurmd slurm-client munge"
done
export PATH="$PATH:/usr/sbin:/sbin"

if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
  die "$CONF exists and was not written by this script; refusing to overwrite it"
fi

if [ -f "$DBDCONF" ] && ! grep -qF "$MARK" "$DBDCONF"; then
  die "$DBDCONF exists and was not written by this script; refusing to overwrite it"
fi

# Up: the controller answers and both nodes serve (idle, or running jobs: another
# test run may be using the cluster).
if scontrol ping >/dev/null 2>&1 && [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -cE '^(idle|mix|alloc|comp)$' || true)" -ge 2 ]; then
  want=none; [ "$ACCOUNTING" = 1 ] && want=slurmdbd
  if grep -q "^AccountingStorageType=accounting_storage/$want$" "$CONF" && grep -q "^MinJobAge=$MIN_JOB_AGE$" "$CONF"; then
    echo "slurm-up: already up"; sinfo
    exit 0
  fi
  die "a cluster is up with another configuration (accounting, MinJobAge): make slurm-down first"
fi

install -d -m 0755 "$ROOT" "$ROOT/ctld" "$ROOT/log" "$ROOT/run" "$ROOT/spool/node1" "$ROOT/spool/node2"

if [ "$ACCOUNTING" = 1 ]; then
  acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
JobAcctGatherType=jobacct_gather/linux"
else
  acct="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
fi

# The hardware line of this machine, so the nodes never drain for a CPU or memory
# mismatch. Each virtual node is declared with the whole machine (oversubscribed 2x).
hw="$(slurmd -C | head -n1 | sed 's/^NodeName=[^ ]* //')"

mkdir -p /etc/slurm
cat >"$CONF.tmp" <<CONF
$MARK
# Throwaway single-machine cluster: slurmctld + two slurmd ("virtual nodes") on 127.0.0.1.
ClusterName=wick
SlurmctldHost=localhost
SlurmUser=root
SlurmctldPort=6817
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
$acct
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# Het jobs are only started by the backfill scheduler: run it every second.
SchedulerParameters=bf_interval=1,bf_hetjob_immediate
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=$MIN_JOB_AGE
SlurmctldPidFile=$ROOT/run/slurmctld.pid
SlurmdPidFile=$ROOT/run/slurmd-%n.pid
StateSaveLocation=$ROOT/ctld
SlurmdSpoolDir=$ROOT/spool/%n
SlurmctldLogFile=$ROOT/log/slurmctld.log
SlurmdLogFile=$ROOT/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=node[1-2] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[6821-6822] $hw State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
mv "$CONF.tmp" "$CONF"

# munged: Debian's postinst made the key; the socket directory is ours to create.
if ! pgrep -x munged >/dev/null; then
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- munged
fi

start() { # start NAME CMD...: detached, in its own session, output to the log dir
  local name=$1; shift
  setsid nohup "$@" >>"$ROOT/log/$name.out" 2>&1 </dev/null &
}
wait_for() { # wait_for WHAT CMD...: until CMD succeeds, at most 30 s
  local what=$1; shift
  for _ in $(seq 1 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "$what did not come up within 30 s; logs in $ROOT/log"
}

if [ "$ACCOUNTING" = 1 ]; then
  command -v mariadbd >/dev/null && command -v slurmdbd >/dev/null ||
    die "accounting needs mariadbd and slurmdbd: apt-get install -y slurmdbd mariadb-server"
  # MariaDB, small: the accounting of a test cluster is a few rows.
  if ! [ -f /run/mysqld/wick-mariadb.pid ] || ! kill -0 "$(cat /run/mysqld/wick-mariadb.pid)" 2>/dev/null; then
    install -d -o mysql -g mysql /run/mysqld
    start mariadb mariadbd --user=mysql --bind-address=127.0.0.1 --pid-file=/run/mysqld/wick-mariadb.pid \
      --innodb-buffer-pool-size=16M --performance-schema=OFF --skip-name-resolve
  fi
  wait_for MariaDB mysql -e "SELECT 1"
  mysql -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'wick';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
  umask 077
  cat >"$DBDCONF" <<DBD
$MARK
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=wick
StorageLoc=slurm_acct_db
PidFile=$ROOT/run/slurmdbd.pid
LogFile=$ROOT/log/slurmdbd.log
DBD
  umask 022
  [ -f "$ROOT/run/slurmdbd.pid" ] && kill -0 "$(cat "$ROOT/run/slurmdbd.pid")" 2>/dev/null ||
    start slurmdbd slurmdbd -D
  wait_for slurmdbd sacctmgr -n show cluster
fi
[ -f "$ROOT/run/slurmctld.pid" ] && kill -0 "$(cat "$ROOT/run/slurmctld.pid")" 2>/dev/null ||
  start slurmctld slurmctld -D -c
for n in node1 node2; do
  [ -f "$ROOT/run/slurmd-$n.pid" ] && kill -0 "$(cat "$ROOT/run/slurmd-$n.pid")" 2>/dev/null ||
    start "slurmd-$n" slurmd -D -N "$n"
done

# Wait (bounded) until the controller answers and both nodes are idle.
for _ in $(seq 1 300); do
  if scontrol ping >/dev/null 2>&1 && [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle' || true)" -ge 2 ]; then
    sinfo
    exit 0
  fi
  sleep 0.1
done
echo "slurm-up: the cluster did not come up within 30 s; logs in $ROOT/log:" >&2
tail -n 20 "$ROOT"/log/*.log >&2 || true
exit 1
