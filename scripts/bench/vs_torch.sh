# Sourced by the *_vs_torch.sh scripts: ratio NAME prints NAME_vs_torch, the
# value of `tessera_NAME` in $ours over that of `torch_NAME` in $theirs (each
# a `name: value unit` listing), or says it is unavailable.
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
