#!/usr/bin/env bash
# Command-line figures, each beside what the machine can do, measured in the same run.
# Usage: scripts/bench.sh path/to/wick
set -euo pipefail
wick=$(realpath "${1:-bin/wick}")
if ! command -v hyperfine >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; fi
fi
export WICK_HOME=$(mktemp -d)
trap 'rm -rf "$WICK_HOME"' EXIT
cd "$WICK_HOME"

# A 2M-line (100 MB) log to read back.
handle=$("$wick" run --detach utils.sh sh -c 'yes 0123456789012345678901234567890123456789012345678 | head -n 2000000')
"$wick" log -t "$handle" >/dev/null
log=$(ls "$WICK_HOME"/logs/wick/*/sh/0/combined.log)

# medians prints each command's median and spread from a hyperfine JSON export.
medians() {
  python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f'{r["median"]*1000:9.1f} ms median  (min {r["min"]*1000:.1f}, max {r["max"]*1000:.1f})  {r["command"]}')
PY
}

if command -v hyperfine >/dev/null 2>&1; then
  hyperfine -N --warmup 3 --runs 20 --style basic \
    "cat $log" "$wick log $handle" "$wick log --no-prefix $handle" \
    --export-json "$WICK_HOME/log.json" >/dev/null
  medians "$WICK_HOME/log.json"
  hyperfine -N --warmup 5 --runs 50 --style basic \
    "sh -c 'echo hi'" \
    "$wick --help" \
    "$wick run -s local_cwd --dryrun utils.echo --msg hi" \
    "$wick run -s local_cwd --detach utils.echo --msg hi" \
    "$wick run -s local_cwd utils.echo --msg hi" \
    --export-json "$WICK_HOME/cli.json" >/dev/null
  medians "$WICK_HOME/cli.json"
else
  echo "hyperfine not found (apt-get install hyperfine); timing 30 runs by hand" >&2
  for cmd in "sh -c 'echo hi'" "$wick --help" "$wick run -s local_cwd --dryrun utils.echo --msg hi" "$wick run -s local_cwd --detach utils.echo --msg hi" "$wick run -s local_cwd utils.echo --msg hi"; do
    times=()
    for _ in $(seq 30); do
      s=$(date +%s%N); eval "$cmd" >/dev/null 2>&1; e=$(date +%s%N)
      times+=($(( (e - s) / 1000 )))
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 15p)
    printf '%-60s median %6.1f ms\n' "$cmd" "$(echo "$median / 1000" | bc -l)"
  done
fi
