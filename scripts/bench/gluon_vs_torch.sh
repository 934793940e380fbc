#!/usr/bin/env bash
# Gluon training steps (gluon_step.lua) against PyTorch eager
# (gluon_step_torch.py) in the same run, and the hybridized step against the
# same network under Module: times as fractions of the other's, and the
# ResNet-18 step's memory growth against PyTorch's (each step waited for,
# as PyTorch's eager step is; the same without waits, where the engine's
# run-ahead adds the queued steps' outputs, is printed beside it), as
# `name: value unit` lines.
#   scripts/bench/gluon_vs_torch.sh [path/to/tessera] [steps] [resnet_steps]
set -euo pipefail
tessera=${1:-build/tessera}
steps=${2:-50}
resnet_steps=${3:-10}
here=$(cd "$(dirname "$0")" && pwd)
# Memory in fresh processes: an allocator that served an earlier model keeps
# its pages, and the growth would miss them.
ours=$("$tessera" "$here/gluon_step.lua" "$steps" "$resnet_steps"
  "$tessera" "$here/gluon_step.lua" "$steps" "$resnet_steps" memory
  "$tessera" "$here/gluon_step.lua" "$steps" "$resnet_steps" memory-runahead)
theirs=$(/usr/bin/python3 "$here/gluon_step_torch.py" "$steps" "$resnet_steps"
  /usr/bin/python3 "$here/gluon_step_torch.py" "$steps" "$resnet_steps" memory)
echo "$ours"
echo "$theirs"
value() { echo "$1" | sed -n "s/^$2: \([0-9.]*\) .*/\1/p"; }
ratio() {  # name, numerator (ours), denominator (ours or theirs), which
  local a b
  a=$(value "$ours" "$2")
  if [ "$4" = ours ]; then b=$(value "$ours" "$3"); else b=$(value "$theirs" "$3"); fi
  if [ -n "$a" ] && [ -n "$b" ]; then
    awk -v a="$a" -v b="$b" -v n="$1" 'BEGIN { printf "%s: %.2f x\n", n, a / b }'
  else
    echo "$1: unavailable"
  fi
}
ratio gluon_lenet_hybrid_vs_torch tessera_gluon_lenet_hybrid_b64 torch_lenet_b64 theirs
ratio gluon_lenet_imperative_vs_torch tessera_gluon_lenet_imperative_b64 torch_lenet_b64 theirs
ratio gluon_lenet_hybrid_vs_module tessera_gluon_lenet_hybrid_b64 tessera_module_lenet_b64 ours
ratio gluon_resnet18_hybrid_vs_torch tessera_gluon_resnet18_hybrid_b16 torch_resnet18_b16 theirs
ratio gluon_resnet18_imperative_vs_torch tessera_gluon_resnet18_imperative_b16 torch_resnet18_b16 theirs
ratio gluon_resnet18_hybrid_vs_module tessera_gluon_resnet18_hybrid_b16 tessera_module_resnet18_b16 ours
ratio gluon_resnet18_rss_growth_vs_torch tessera_gluon_resnet18_hybrid_rss_growth torch_resnet18_rss_growth theirs
ratio gluon_resnet18_rss_growth_runahead_vs_torch tessera_gluon_resnet18_hybrid_rss_growth_runahead torch_resnet18_rss_growth theirs
