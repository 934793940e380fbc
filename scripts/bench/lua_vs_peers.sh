#!/usr/bin/env bash
# The Lua NDArray loops of ndarray_loop.lua against their peers, printed as
# `name: value unit` lines:
#   - `c = a + b` and `c = a + 1` on 1-element float32 arrays: Tessera from
#     Lua, NumPy and PyTorch (CPU) from Python (`unavailable` when not
#     installed);
#   - summing 10M float32 through the FFI against the same loop in C (cc -O2),
#     and their ratio.
#   - the ratios of Tessera's loops to NumPy's and PyTorch's (below 1: faster).
# Every loop figure is the best of ROUNDS runs of N ops in one process.
#   scripts/bench/lua_vs_peers.sh [path/to/tessera] [N] [ROUNDS]
set -euo pipefail
tessera=${1:-build/tessera}
n=${2:-20000}
rounds=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3

lua_out=$("$tessera" "$here/ndarray_loop.lua" "$n" "$rounds")
echo "$lua_out"

peer() {
  local name=$1 module=$2 code=$3
  if "$python" -c "import $module" 2>/dev/null; then
    "$python" - "$n" "$rounds" <<PY
import sys, time
n, rounds = int(sys.argv[1]), int(sys.argv[2])
$code
for _ in range(1000):  # warm up
    f()
best = float("inf")
for _ in range(rounds):
    t0 = time.perf_counter()
    for _ in range(n):
        c = f()
    best = min(best, time.perf_counter() - t0)
print("$name: %.3f us/op" % (best / n * 1e6))
PY
  else
    echo "$name: unavailable"
  fi
}
peers_out=$(
peer numpy_add_1elem numpy 'import numpy as np
a = np.array([1], dtype=np.float32); b = np.array([2], dtype=np.float32)
f = lambda: a + b'
peer torch_add_1elem torch 'import torch
torch.set_num_threads(1)
a = torch.tensor([1.0]); b = torch.tensor([2.0])
f = lambda: a + b'
peer numpy_add_scalar_1elem numpy 'import numpy as np
a = np.array([1], dtype=np.float32)
f = lambda: a + 1'
peer torch_add_scalar_1elem torch 'import torch
torch.set_num_threads(1)
a = torch.tensor([1.0])
f = lambda: a + 1'
)
echo "$peers_out"

# Tessera's time over each peer's, for the loops both ran.
printf '%s\n%s\n' "$lua_out" "$peers_out" | awk '
  / us\/op$/ { t[$1] = $2 }
  END {
    n = split("add_1elem add_scalar_1elem", loops, " ")
    for (i = 1; i <= n; ++i) {
      l = loops[i]; nd = t["nd_" l ":"]
      if (nd == "") continue
      if (t["numpy_" l ":"] > 0) printf "ratio.%s.tessera_vs_numpy: %.2f x\n", l, nd / t["numpy_" l ":"]
      if (t["torch_" l ":"] > 0) printf "ratio.%s.tessera_vs_torch: %.2f x\n", l, nd / t["torch_" l ":"]
    }
  }'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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
