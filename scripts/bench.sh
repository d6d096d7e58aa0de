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

if command -v hyperfine >/dev/null 2>&1; then
  hyperfine -N --warmup 5 --runs 50 --style basic \
    "sh -c 'echo hi'" \
    "$wick --help" \
    "$wick run -s local_cwd --dryrun utils.echo --msg hi" \
    "$wick run -s local_cwd utils.echo --msg hi" \
    --export-markdown "$WICK_HOME/cli.md" >/dev/null
  cat "$WICK_HOME/cli.md"
else
  echo "hyperfine not found (apt-get install hyperfine); timing 30 runs by hand" >&2
  for cmd in "sh -c 'echo hi'" "$wick --help" "$wick run -s local_cwd --dryrun utils.echo --msg hi" "$wick run -s local_cwd utils.echo --msg hi"; do
    times=()
    for _ in $(seq 30); do
      s=$(date +%s%N); eval "$cmd" >/dev/null 2>&1; e=$(date +%s%N)
      times+=($(( (e - s) / 1000 )))
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 15p)
    printf '%-60s median %6.1f ms\n' "$cmd" "$(echo "$median / 1000" | bc -l)"
  done
fi
