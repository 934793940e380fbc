#!/usr/bin/env bash
# conv_bench (Tessera's Convolution and oneDNN called directly) and the same
# convolution in PyTorch (conv_torch.py), then Tessera's time as a fraction
# of PyTorch's, as `name: value unit` lines; and conv_bench's small-map
# convolution (512 channels on 2x2) against oneDNN called directly. The two sides alternate, three
# runs each (this machine's load drifts over seconds); each figure is the
# best of its three medians.
#   scripts/bench/conv_vs_torch.sh [path/to/build] [runs]
set -euo pipefail
build=${1:-build}
runs=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
have_torch=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || have_torch=0
ours="" theirs=""
for _ in $(seq "$runs"); do
  ours+=$("$build/tests/conv_bench")$'\n'
  if [ $have_torch = 1 ]; then theirs+=$(/usr/bin/python3 "$here/conv_torch.py")$'\n'; fi
done
best() {  # best() TEXT NAME: the smallest value of NAME in TEXT
  echo "$1" | sed -n "s/^$2: \([0-9.]*\) .*/\1/p" | sort -g | head -1
}
for side in tessera onednn; do
  for pass in forward backward; do
    echo "conv3x3_64_b32_56_${pass}_${side}: $(best "$ours" "conv3x3_64_b32_56_${pass}_${side}") ms"
  done
done
# ResNet's last stage at 64x64 input: Tessera against oneDNN called directly.
small=conv3x3_512_b16_2
for pass in forward backward; do
  a=$(best "$ours" "${small}_${pass}_tessera")
  d=$(best "$ours" "${small}_${pass}_onednn")
  echo "${small}_${pass}_tessera: $a ms"
  echo "${small}_${pass}_onednn: $d ms"
  awk -v a="$a" -v d="$d" -v n="${small}_${pass}" 'BEGIN { printf "%s_vs_onednn: %.2f x\n", n, a / d }'
done
if [ $have_torch = 0 ]; then
  echo "conv3x3_64_b32_56_vs_torch: unavailable"
  exit 0
fi
for pass in forward backward; do
  a=$(best "$ours" "conv3x3_64_b32_56_${pass}_tessera")
  d=$(best "$ours" "conv3x3_64_b32_56_${pass}_onednn")
  b=$(best "$theirs" "conv3x3_64_b32_56_${pass}_torch")
  echo "conv3x3_64_b32_56_${pass}_torch: $b ms"
  awk -v a="$a" -v d="$d" -v b="$b" -v n="$pass" 'BEGIN {
    printf "conv3x3_64_b32_56_%s_vs_onednn: %.2f x\n", n, a / d
    printf "conv3x3_64_b32_56_%s_vs_torch: %.2f x\n", n, a / b }'
done
