#!/usr/bin/env bash
# The convolution of conv_vs_torch.sh (3x3, 64 -> 64, batch 32, 56x56,
# float32 with bias, forward and backward) on the GPU from a script:
# Tessera's mx.nd.Convolution under autograd (gpu_conv.lua) against
# PyTorch's F.conv2d under autograd (conv_torch.py cuda: cuDNN with its
# autotuner on, TF32 off, as Tessera's defaults) on the same GPU in the same
# run, then Tessera's time as a fraction of PyTorch's, as `name: value unit`
# lines.
#   scripts/bench/gpu_conv_vs_torch.sh [path/to/tessera] [python3] [reps]
set -uo pipefail
tessera=${1:-build/tessera}
python=${2:-python3}
reps=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
ours=$("$tessera" "$here/gpu_conv.lua" "$reps")
theirs=$("$python" "$here/conv_torch.py" "$reps" cuda)
echo "$ours"
echo "$theirs"
. "$here/vs_torch.sh"
ratio gpu_conv3x3_64_b32_56_step
