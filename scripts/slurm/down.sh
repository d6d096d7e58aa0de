#!/usr/bin/env bash
# Stop the throwaway cluster started by scripts/slurm/up.sh, by pid (slurmd, slurmctld,
# slurmdbd and MariaDB when accounting was on, then munged), and remove the pid files so that no stale pid is ever signalled.
# Jobs still running are killed with their slurmd. Logs stay in $WICK_SLURM_ROOT/log.
set -uo pipefail

ROOT="${WICK_SLURM_ROOT:-/tmp/wick-slurm}"

stop() { # stop PIDFILE: SIGTERM, wait up to 10 s, then SIGKILL
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

# Each daemon takes a second or two to stop: the slurm ones go together.
stop "$ROOT/run/slurmd-node1.pid" &
stop "$ROOT/run/slurmd-node2.pid" &
stop "$ROOT/run/slurmctld.pid" &
wait
stop "$ROOT/run/slurmdbd.pid"
stop /run/mysqld/wick-mariadb.pid
stop /run/munge/munged.pid
echo "slurm-down: stopped"
