#!/usr/bin/env bash
# An LSTM of 2 layers of 512 units, sequence 35, batch 32, input 512, float32,
# forward and backward on 2 threads: Tessera's fused RNN op from Lua
# (lstm.lua, what a script sees), PyTorch's nn.LSTM (lstm_torch.py), and the
# op (on oneDNN) against its own loop over the BLAS, against that loop's
# limit (the same GEMMs called directly) and against oneDNN's LSTM primitive
# called directly (rnn_bench). The
# sides alternate, `runs` times each; each figure is the best of its medians.
#   scripts/bench/lstm_vs_torch.sh [path/to/build] [runs]
set -euo pipefail
build=${1:-build}
runs=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
have_torch=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || have_torch=0
ours="" theirs="" limit=""
for _ in $(seq "$runs"); do
  ours+=$(TESSERA_OMP_THREADS=2 "$build/tessera" "$here/lstm.lua")$'\n'
  limit+=$(TESSERA_OMP_THREADS=2 "$build/tests/rnn_bench" 10 2)$'\n'
  if [ $have_torch = 1 ]; then theirs+=$(/usr/bin/python3 "$here/lstm_torch.py")$'\n'; fi
done
best() {  # best() TEXT NAME: the smallest value of NAME in TEXT
  echo "$1" | sed -n "s/^$2: \([0-9.]*\) .*/\1/p" | sort -g | head -1
}
name=lstm2x512_t35_b32
f=$(best "$ours" "${name}_forward") b=$(best "$ours" "${name}_backward")
echo "${name}_forward: $f ms"
echo "${name}_backward: $b ms"
for k in loop_forward loop_backward op_forward op_backward op_inference gemm_forward \
  gemm_backward onednn_forward onednn_backward onednn_inference; do
  echo "${name}_$k: $(best "$limit" "${name}_$k") ms"
done
awk -v of="$(best "$limit" "${name}_op_forward")" -v ob="$(best "$limit" "${name}_op_backward")" \
  -v gf="$(best "$limit" "${name}_gemm_forward")" -v gb="$(best "$limit" "${name}_gemm_backward")" \
  -v df="$(best "$limit" "${name}_onednn_forward")" -v db="$(best "$limit" "${name}_onednn_backward")" \
  -v lf="$(best "$limit" "${name}_loop_forward")" -v lb="$(best "$limit" "${name}_loop_backward")" \
  -v n="$name" 'BEGIN { printf "%s_loop_vs_gemms: %.2f x\n", n, (lf + lb) / (gf + gb)
    printf "%s_vs_loop: %.2f x\n", n, (of + ob) / (lf + lb)
    printf "%s_vs_onednn: %.2f x\n", n, (of + ob) / (df + db) }'
if [ $have_torch = 0 ]; then
  echo "${name}_vs_torch: unavailable"
  exit 0
fi
tf=$(best "$theirs" "${name}_forward_torch") tb=$(best "$theirs" "${name}_backward_torch")
echo "${name}_forward_torch: $tf ms"
echo "${name}_backward_torch: $tb ms"
awk -v a="$f" -v b="$b" -v c="$tf" -v d="$tb" -v n="$name" \
  'BEGIN { printf "%s_vs_torch: %.2f x\n", n, (a + b) / (c + d) }'
