#!/usr/bin/env bash
# Gluon training steps (gluon_step.lua) against PyTorch eager
# (gluon_step_torch.py) in the same run, and the hybridized step against the
# same network under Module: times as fractions of the other's, and the
# ResNet-18 step's memory growth against PyTorch's (each step waited for,
# as PyTorch's eager step is; the same without waits, where the engine's
# run-ahead adds the queued steps' outputs, is printed beside it), as
# `name: value unit` lines.
# The timings alternate between the two sides `rounds` times (default 3)
# and each is the median of its rounds: on a shared machine one run of
# either side moves by 10-20%.
#   scripts/bench/gluon_vs_torch.sh [path/to/tessera] [steps] [resnet_steps] [rounds]
set -euo pipefail
tessera=${1:-build/tessera}
steps=${2:-50}
resnet_steps=${3:-10}
rounds=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
# The median of each `name: value unit` figure over the lines read, in the
# order the names first appear.
medians() {
  awk -F': ' '
    { split($2, f, " "); if (!($1 in n)) order[++names] = $1
      v[$1, ++n[$1]] = f[1] + 0; unit[$1] = f[2] }
    END { for (i = 1; i <= names; ++i) { k = order[i]; m = n[k]
            for (a = 2; a <= m; ++a) { x = v[k, a]
              for (b = a - 1; b >= 1 && v[k, b] > x; --b) v[k, b + 1] = v[k, b]
              v[k, b + 1] = x }
            printf "%s: %.3f %s\n", k, v[k, int((m + 1) / 2)], unit[k] } }'
}
runs_ours="" runs_theirs=""
for ((r = 0; r < rounds; ++r)); do
  runs_ours+=$("$tessera" "$here/gluon_step.lua" "$steps" "$resnet_steps")$'\n'
  runs_theirs+=$(/usr/bin/python3 "$here/gluon_step_torch.py" "$steps" "$resnet_steps")$'\n'
done
# Memory in fresh processes: an allocator that served an earlier model keeps
# its pages, and the growth would miss them.
ours=$(echo -n "$runs_ours" | medians
  "$tessera" "$here/gluon_step.lua" "$steps" "$resnet_steps" memory
  "$tessera" "$here/gluon_step.lua" "$steps" "$resnet_steps" memory-runahead)
theirs=$(echo -n "$runs_theirs" | medians
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
