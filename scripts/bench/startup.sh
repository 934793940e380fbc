#!/usr/bin/env bash
# Start-up time of `tessera -e ''` against `luajit -e ''`: the median of N runs
# (default 30) of the wall time and of the CPU time (user + system) of each
# process, printed as `name: value unit` lines. On a busy machine the wall
# time mostly measures waiting for a core; the CPU time does not.
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

measure startup_tessera "$tessera" -e ''
measure startup_tessera_naive "$tessera" --engine naive -e ''
measure startup_tessera_push_wait "$tessera" -e 'mx.engine.push(function() end) mx.waitall()'
if command -v luajit >/dev/null; then
  measure startup_luajit luajit -e ''
fi
