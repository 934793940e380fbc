#!/usr/bin/env bash
# Training steps of the MNIST MLP and LeNet: Tessera (train_step.lua) and
# PyTorch (train_step_torch.py) in the same run, then Tessera's time as a
# fraction of PyTorch's, as `name: value unit` lines.
#   scripts/bench/train_vs_torch.sh [path/to/tessera] [steps]
set -euo pipefail
tessera=${1:-build/tessera}
steps=${2:-50}
here=$(cd "$(dirname "$0")" && pwd)
ours=$("$tessera" "$here/train_step.lua" "$steps")
theirs=$(/usr/bin/python3 "$here/train_step_torch.py" "$steps")
echo "$ours"
echo "$theirs"
ratio() {
  local a b
  a=$(echo "$ours" | sed -n "s/^tessera_$1: \([0-9.]*\) .*/\1/p")
  b=$(echo "$theirs" | sed -n "s/^torch_$1: \([0-9.]*\) .*/\1/p")
  if [ -n "$a" ] && [ -n "$b" ]; then
    awk -v a="$a" -v b="$b" -v n="$1" 'BEGIN { printf "%s_vs_torch: %.2f x\n", n, a / b }'
  else
    echo "$1_vs_torch: unavailable"
  fi
}
ratio mlp_step_b100
ratio lenet_step_b64
