#!/usr/bin/env bash
# `wick log` at scale, each figure beside cat of the same files (issue 10, item 9):
#   - peak RSS and time of `wick log` on 2 replicas x 10M lines, the second replica's
#     lines all later than the first's (the case that held the whole log in memory);
#   - time of `wick log` on 1000 replicas of one line each.
# Needs about 2.5 GB of disk. Usage: scripts/logscale.sh path/to/wick
set -euo pipefail
wick=$(realpath "${1:-bin/wick}")
export WICK_HOME=$(mktemp -d)
trap 'rm -rf "$WICK_HOME"' EXIT
cd "$WICK_HOME"

cat > gen.sh <<'SH'
if [ "$WICK_REPLICA_ID" = 1 ]; then sleep 1; fi
yes "a log line of forty bytes, more or less" | head -n 10000000
SH
two=$("$wick" run --detach utils.sh --num_replicas 2 sh "$WICK_HOME/gen.sh")
"$wick" log -f "$two" >/dev/null
many=$("$wick" run --detach utils.sh --num_replicas 1000 echo one line)
"$wick" log -f "$many" >/dev/null

measure() { # label, command...: elapsed seconds and peak RSS, output counted
  local label=$1; shift
  /usr/bin/time -f "%e s  %M KB peak RSS  $label" "$@" 2>&1 >/dev/null | tail -1
}
echo "2 replicas x 10M lines:"
measure "wick log" "$wick" log "$two"
measure "cat (baseline)" sh -c "cat $WICK_HOME/logs/wick/${two##*/}/sh/*/combined.log"
echo "1000 replicas x 1 line:"
measure "wick log" "$wick" log "$many"
measure "cat (baseline)" sh -c "cat $WICK_HOME/logs/wick/${many##*/}/sh/*/combined.log"
