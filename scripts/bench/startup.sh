#!/usr/bin/env bash
# Start-up time of `tessera -e ''` against `luajit -e ''`: the median of N runs
# (default 30) of the wall time and of the CPU time (user + system) of each
# process, printed as `name: value unit` lines. On a busy machine the wall
# time mostly measures waiting for a core; the CPU time does not. Also a
# process that makes one array (start-up, then the operator registrations
# that start-up defers to the registry's first use), and the ratio of the two
# start-ups' wall times.
#   scripts/bench/startup.sh [path/to/tessera] [runs]
set -euo pipefail
tessera=${1:-build/tessera}
runs=${2:-30}

measure() {
  local name=$1
  shift
  python3 - "$name" "$runs" "$@" <<'PY'
import os, statistics, subprocess, sys, time
name, runs, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def once():
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed")
    return wall, (usage.ru_utime + usage.ru_stime) * 1e3
once()  # warm the page cache
runs_ = [once() for _ in range(runs)]
print(f"{name}_wall: {statistics.median(r[0] for r in runs_):.2f} ms")
print(f"{name}_cpu: {statistics.median(r[1] for r in runs_):.2f} ms")
PY
}

measure_ms() {  # the median wall time of a `measure` line
  sed -n "s/^$1_wall: \(.*\) ms$/\1/p" <<<"$2"
}

tessera_lines=$(measure startup_tessera "$tessera" -e '')
echo "$tessera_lines"
measure startup_tessera_naive "$tessera" --engine naive -e ''
measure startup_tessera_push_wait "$tessera" -e 'mx.engine.push(function() end) mx.waitall()'
# The first operator call pays for the registrations start-up skipped.
measure startup_tessera_first_op "$tessera" -e 'mx.nd.zeros({1}):wait_to_read()'
if command -v luajit >/dev/null; then
  luajit_lines=$(measure startup_luajit luajit -e '')
  echo "$luajit_lines"
  python3 -c 'import sys; print(f"startup_tessera_over_luajit: {float(sys.argv[1]) / float(sys.argv[2]):.2f} x")' \
    "$(measure_ms startup_tessera "$tessera_lines")" "$(measure_ms startup_luajit "$luajit_lines")"
fi
