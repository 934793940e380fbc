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
. "$here/vs_torch.sh"
ratio mlp_step_b100
ratio lenet_step_b64
