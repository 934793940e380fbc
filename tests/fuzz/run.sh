#!/usr/bin/env bash
# Runs libFuzzer harnesses and reports executions and crashes per harness.
#   run.sh [--seconds N] [--jobs J] [--fresh] BUILD_FUZZ_DIR [HARNESS...]
# BUILD_FUZZ_DIR holds the harnesses (the build's fuzz/ folder). Without
# HARNESS names, every fuzz_* there runs. Each keeps its corpus in
# BUILD_FUZZ_DIR/corpus/<harness> (grown run after run; --fresh starts from
# the seeds alone, for short reproducible runs) and is seeded from
# tests/fuzz/seeds/<name> (the NDArray-file harness also from tests/data).
# A crash, hang (10 s on one input), leak or sanitizer report leaves its
# input in BUILD_FUZZ_DIR/artifacts and makes the run fail.
set -euo pipefail

seconds=600 jobs=$(nproc) fresh=0
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --fresh) fresh=1; shift ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -ge 1 ]] || { echo "usage: run.sh [--seconds N] [--jobs J] [--fresh] BUILD_FUZZ_DIR [HARNESS...]" >&2; exit 2; }
dir=$(cd "$1" && pwd); shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
harnesses=("$@")
if [[ ${#harnesses[@]} -eq 0 ]]; then
  for f in "$dir"/fuzz_*; do [[ -x $f && -f $f ]] && harnesses+=("$(basename "$f")"); done
fi
[[ ${#harnesses[@]} -gt 0 ]] || { echo "run.sh: no harnesses in $dir" >&2; exit 1; }
mkdir -p "$dir/artifacts" "$dir/logs"

run_one() {
  local h=$1 name=${1#fuzz_}
  local corpus="$dir/corpus/$name"
  if [[ $fresh -eq 1 ]]; then corpus=$(mktemp -d); fi
  mkdir -p "$corpus"
  local seeds=()
  [[ -d $here/seeds/$name ]] && seeds+=("$here/seeds/$name")
  [[ $name == params ]] && seeds+=("$root/tests/data/ndarray")
  local extra=()
  [[ -f $here/$name.dict ]] && extra+=("-dict=$here/$name.dict")
  local rc=0
  "$dir/$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/$h-" "${extra[@]}" "$corpus" "${seeds[@]}" \
    >"$dir/logs/$h.log" 2>&1 || rc=$?
  [[ $fresh -eq 1 ]] && rm -rf "$corpus"
  local runs
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/logs/$h.log" | tail -1)
  if [[ $rc -eq 0 ]]; then
    echo "$h: ${runs:-?} executions in $seconds s, no crash"
  else
    echo "$h: FAILED after ${runs:-?} executions (exit $rc); log $dir/logs/$h.log:"
    grep -E "ERROR|SUMMARY|Test unit written|deadly|terminate" "$dir/logs/$h.log" | head -20
  fi
  return $rc
}

status=0
pids=()
for h in "${harnesses[@]}"; do
  run_one "$h" &
  pids+=($!)
  # At most `jobs` at a time.
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do sleep 1; done
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
