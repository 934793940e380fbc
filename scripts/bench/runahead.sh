#!/usr/bin/env bash
# The run-ahead loop (runahead.lua) as a user sees it, whole process: time
# and peak resident memory, never waiting and waiting for each array, for
# 100 arrays of 10 MB and 40 of 100 MB. One `name: value unit` line each.
#   scripts/bench/runahead.sh [path/to/tessera]
set -euo pipefail
tessera=${1:-build/tessera}
here=$(cd "$(dirname "$0")" && pwd)
for shape in "10 100" "100 40"; do
  set -- $shape
  for wait in 0 1; do
    name="runahead_${1}MB_x${2}"
    if [ "$wait" = 1 ]; then name="${name}_waiting"; fi
    out=$(/usr/bin/time -f "%e %M" "$tessera" "$here/runahead.lua" "$1" "$2" "$wait" 2>&1 >/dev/null | tail -1)
    read -r secs kb <<<"$out"
    echo "$name: $secs s"
    echo "${name}_peak: $((kb / 1024)) MB"
  done
done
