#!/usr/bin/env bash
# What check_numerics costs: a LeNet training step (dist_step.lua, one
# process, batch 64) with every op checking its outputs for NaN and Inf
# (TESSERA_CHECK_NUMERICS=1) against the same step without, alternated.
#   scripts/bench/check_numerics_cost.sh [path/to/tessera]
set -euo pipefail
tessera=${1:-build/tessera}
here=$(cd "$(dirname "$0")" && pwd)
value() { awk '{print $2}' <<<"$1"; }
off=$("$tessera" "$here/dist_step.lua" single 64 20)
on=$(TESSERA_CHECK_NUMERICS=1 "$tessera" "$here/dist_step.lua" single 64 20)
off2=$("$tessera" "$here/dist_step.lua" single 64 20)
on2=$(TESSERA_CHECK_NUMERICS=1 "$tessera" "$here/dist_step.lua" single 64 20)
best() { awk -v a="$1" -v b="$2" 'BEGIN {print (a < b ? a : b)}'; }
o=$(best "$(value "$off")" "$(value "$off2")")
n=$(best "$(value "$on")" "$(value "$on2")")
echo "lenet_step_b64: $o ms"
echo "lenet_step_b64_check_numerics: $n ms"
awk -v a="$n" -v b="$o" 'BEGIN {printf "check_numerics_cost_lenet_b64: %.2f x\n", a / b}'
