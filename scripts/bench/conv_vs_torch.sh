#!/usr/bin/env bash
# conv_bench (Tessera's Convolution and oneDNN called directly) and the same
# convolution in PyTorch (conv_torch.py), in one run, then Tessera's time as
# a fraction of PyTorch's, as `name: value unit` lines.
#   scripts/bench/conv_vs_torch.sh [path/to/build]
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
ours=$("$build/tests/conv_bench")
echo "$ours"
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "conv3x3_64_b32_56_vs_torch: unavailable"
  exit 0
fi
theirs=$(/usr/bin/python3 "$here/conv_torch.py")
echo "$theirs"
for pass in forward backward; do
  a=$(echo "$ours" | sed -n "s/^conv3x3_64_b32_56_${pass}_tessera: \([0-9.]*\) .*/\1/p")
  b=$(echo "$theirs" | sed -n "s/^conv3x3_64_b32_56_${pass}_torch: \([0-9.]*\) .*/\1/p")
  awk -v a="$a" -v b="$b" -v n="$pass" \
    'BEGIN { printf "conv3x3_64_b32_56_%s_vs_torch: %.2f x\n", n, a / b }'
done
