#!/usr/bin/env bash
# The LSTM of lstm_vs_torch.sh (2 layers of 512, sequence 35, batch 32,
# float32, forward and backward) on the GPU: Tessera's fused RNN op (its own
# loop: cuBLAS products and a cell kernel per step) against PyTorch's
# nn.LSTM (cuDNN) on the same GPU in the same run, then Tessera's time as a
# fraction of PyTorch's, as `name: value unit` lines.
#   scripts/bench/gpu_lstm_vs_torch.sh [path/to/tessera] [python3] [reps]
set -uo pipefail
tessera=${1:-build/tessera}
python=${2:-python3}
reps=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
ours=$("$tessera" "$here/lstm.lua" "$reps" lstm gpu)
theirs=$("$python" "$here/lstm_torch.py" "$reps" cuda)
echo "$ours"
echo "$theirs"
. "$here/vs_torch.sh"
ratio gpu_lstm2x512_t35_b32_step
