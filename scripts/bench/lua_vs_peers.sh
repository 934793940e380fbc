#!/usr/bin/env bash
# The Lua NDArray loops of ndarray_loop.lua against their peers, printed as
# `name: value unit` lines:
#   - `c = a + b` and `c = a + 1` on 1-element float32 arrays: Tessera from
#     Lua, NumPy and PyTorch (CPU, one thread) from Python (`unavailable`
#     when not installed), each written the same way: the statement inline
#     in a counted loop inside a function, the last result kept (Tessera
#     then waits for it). In-loop figures are the best of ROUNDS loops of N
#     ops in one process; whole-process figures (proc_*) run each language's
#     program with PROC_N ops and with none, best of ROUNDS runs each, and
#     divide the difference by PROC_N: start-up cancels out, and freeing the
#     results (the GC, the pools, the exit) is counted.
#   - summing 10M float32 through the FFI against the same loop in C (cc -O2),
#     and their ratio.
#   - the ratios of Tessera's figures to NumPy's and PyTorch's (below 1: faster).
#   scripts/bench/lua_vs_peers.sh [path/to/tessera] [N] [ROUNDS] [PROC_N]
set -euo pipefail
tessera=${1:-build/tessera}
n=${2:-300000}
rounds=${3:-5}
proc_n=${4:-1000000}
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

lua_out=$("$tessera" "$here/ndarray_loop.lua" "$n" "$rounds")
echo "$lua_out"

# The peers' setups: a Python module, and the statement's operands.
peer_setup() {
  case $1 in
    numpy) echo 'import numpy as np
a = np.array([1], dtype=np.float32); b = np.array([2], dtype=np.float32)' ;;
    torch) echo 'import torch
torch.set_num_threads(1)
a = torch.tensor([1.0]); b = torch.tensor([2.0])' ;;
  esac
}

# In one process: the best of `rounds` calls of the loop function.
peer_loop() {
  local lib=$1 loop=$2 stmt=$3
  if ! "$python" -c "import $lib" 2>/dev/null; then
    echo "${lib}_${loop}: unavailable"
    return
  fi
  "$python" - "$n" "$rounds" <<PY
import sys, time
n, rounds = int(sys.argv[1]), int(sys.argv[2])
$(peer_setup "$lib")
def run(iters):
    c = None
    for _ in range(iters):
        c = $stmt
    return c
run(1000)  # warm up
best = float("inf")
for _ in range(rounds):
    t0 = time.perf_counter()
    run(n)
    best = min(best, time.perf_counter() - t0)
print("${lib}_${loop}: %.3f us/op" % (best / n * 1e6))
PY
}

# Whole processes: `cmd... N` against `cmd... 0`, best of `rounds` each.
proc_figure() {
  local name=$1
  shift
  "$python" - "$name" "$proc_n" "$rounds" "$@" <<'PY'
import subprocess, sys, time
name, n, rounds, cmd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def best(count):
    t = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run(cmd + [str(count)], check=True, stdout=subprocess.DEVNULL)
        t = min(t, time.perf_counter() - t0)
    return t
best(0)  # warm the page cache
print("%s: %.3f us/op" % (name, (best(n) - best(0)) / n * 1e6))
PY
}

for loop in add_1elem add_scalar_1elem; do
  if [ $loop = add_1elem ]; then lua_stmt='a + b'; py_stmt='a + b'; else lua_stmt='a + 1'; py_stmt='a + 1'; fi
  cat >"$work/$loop.lua" <<LUA
local n = tonumber(arg[1])
local a, b = mx.nd.array({1}), mx.nd.array({2})
local function run(iters)
  local c = a
  for _ = 1, iters do c = $lua_stmt end
  return c
end
run(n):wait_to_read()
LUA
  for lib in numpy torch; do
    cat >"$work/${lib}_$loop.py" <<PY
import sys
n = int(sys.argv[1])
$(peer_setup $lib)
def run(iters):
    c = a
    for _ in range(iters):
        c = $py_stmt
    return c
run(n)
PY
  done
done

peers_out=$(
  for lib in numpy torch; do
    peer_loop $lib add_1elem 'a + b'
    peer_loop $lib add_scalar_1elem 'a + 1'
  done
)
echo "$peers_out"
proc_out=$(
  for loop in add_1elem add_scalar_1elem; do
    proc_figure proc_nd_$loop "$tessera" "$work/$loop.lua"
    for lib in numpy torch; do
      if "$python" -c "import $lib" 2>/dev/null; then
        proc_figure proc_${lib}_$loop "$python" "$work/${lib}_$loop.py"
      else
        echo "proc_${lib}_$loop: unavailable"
      fi
    done
  done
)
echo "$proc_out"

# Tessera's time over each peer's, for the loops both ran.
printf '%s\n%s\n%s\n' "$lua_out" "$peers_out" "$proc_out" | awk '
  / us\/op$/ { t[$1] = $2 }
  END {
    n = split("add_1elem add_scalar_1elem", loops, " ")
    for (i = 1; i <= n; ++i) {
      l = loops[i]
      for (k = 0; k < 2; ++k) {
        pre = k ? "proc_" : ""
        nd = t[pre "nd_" l ":"]
        if (nd == "") continue
        if (t[pre "numpy_" l ":"] > 0)
          printf "ratio.%s%s.tessera_vs_numpy: %.2f x\n", pre, l, nd / t[pre "numpy_" l ":"]
        if (t[pre "torch_" l ":"] > 0)
          printf "ratio.%s%s.tessera_vs_torch: %.2f x\n", pre, l, nd / t[pre "torch_" l ":"]
      }
    }
  }'

tmp=$work
cat >"$tmp/sum.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(void) {
  const long m = 10 * 1000 * 1000;
  float* p = malloc(m * sizeof *p);
  for (long i = 0; i < m; ++i) p[i] = 1.0f;
  double best = 1e9, s = 0;
  for (int r = 0; r < 6; ++r) {
    double t0 = now();
    s = 0;  /* a double accumulator, as Lua's numbers are */
    for (long i = 0; i < m; ++i) s += p[i];
    double dt = now() - t0;
    if (r > 0 && dt < best) best = dt;
  }
  if (s != m) return 1;
  printf("c_sum_10M: %.2f ms\n", best * 1e3);
  free(p);
  return 0;
}
C
if command -v cc >/dev/null; then
  cc -O2 -o "$tmp/sum" "$tmp/sum.c"
  c_out=$("$tmp/sum")
  echo "$c_out"
  lua_ms=$(echo "$lua_out" | awk '/^nd_ffi_sum_10M:/ {print $2}')
  c_ms=$(echo "$c_out" | awk '{print $2}')
  awk -v l="$lua_ms" -v c="$c_ms" 'BEGIN { printf "lua_ffi_vs_c_sum_ratio: %.2f x\n", l / c }'
else
  echo "c_sum_10M: unavailable"
fi
