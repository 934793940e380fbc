#!/usr/bin/env bash
# A LeNet training step (dist_step.lua) with dist_sync on 2 workers against
# the same per-worker batch in one process on one core (what each worker
# gets: mpirun binds each to a core), with and without fusion: the
# difference is the communication that does not overlap compute, per step.
# Then the 'local' store on 2 contexts against one context with the whole
# batch. One `name: value unit` line each.
#   scripts/bench/dist_step.sh [path/to/tessera]
set -euo pipefail
tessera=${1:-build/tessera}
here=$(cd "$(dirname "$0")" && pwd)
value() { awk '{print $2}' <<<"$1"; }
b=64
single=$(taskset -c 0 "$tessera" "$here/dist_step.lua" single $b 20)
fused=$("$tessera" --launch 2 "$here/dist_step.lua" dist $b 20)
unfused=$(TESSERA_KV_FUSION_BYTES=0 "$tessera" --launch 2 "$here/dist_step.lua" dist $b 20)
echo "$single"
echo "$fused" | sed 's/:/_fused:/'
echo "$unfused" | sed 's/:/_unfused:/'
awk -v d="$(value "$fused")" -v s="$(value "$single")" \
  'BEGIN {printf "dist_step_exposed_comm_fused_b'$b'_np2: %.2f ms\n", d - s}'
awk -v d="$(value "$unfused")" -v s="$(value "$single")" \
  'BEGIN {printf "dist_step_exposed_comm_unfused_b'$b'_np2: %.2f ms\n", d - s}'
whole=$((2 * b))
one=$("$tessera" "$here/dist_step.lua" single $whole 20)
two=$("$tessera" "$here/dist_step.lua" contexts $whole 20)
echo "$one"
echo "$two"
awk -v a="$(value "$two")" -v b="$(value "$one")" \
  'BEGIN {printf "local_2contexts_vs_1context_b'$whole': %.2f x\n", a / b}'
