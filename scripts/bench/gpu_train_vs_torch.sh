#!/usr/bin/env bash
# GPU training steps of LeNet and ResNet-18: Tessera (gpu_train_step.lua)
# and PyTorch eager (gpu_train_step_torch.py) on the same GPU in the same
# run, then Tessera's time as a fraction of PyTorch's (below 1: faster), as
# `name: value unit` lines.
#   scripts/bench/gpu_train_vs_torch.sh [path/to/tessera] [python3]
set -uo pipefail
tessera=${1:-build/tessera}
python=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)
ours=$("$tessera" "$here/gpu_train_step.lua")
theirs=$("$python" "$here/gpu_train_step_torch.py")
echo "$ours"
echo "$theirs"
. "$here/vs_torch.sh"
ratio gpu_lenet_step_b64
ratio gpu_resnet18_step_b32
