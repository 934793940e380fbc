#!/usr/bin/env bash
# A LeNet epoch on MNIST read from PNG records (ImageRecordIter, 2 threads)
# against the same epoch from the IDX files in memory (MNISTIter with
# PrefetchingIter): the time the record pipeline adds. Runs alternate, two
# epochs each, twice; the figures are the medians of the epochs after the
# first of each run.
#   scripts/bench/lenet_epoch_records.sh [path/to/tessera] [MNIST_DIR=data/mnist]
set -euo pipefail
tessera=${1:-build/tessera}
data=${2:-${TESSERA_MNIST:-data/mnist}}
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "lenet_epoch_records_vs_idx: unavailable (no MNIST in $data)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tessera" "$here/../tools/mnist_to_rec.lua" --data "$data" --prefix "$tmp/mnist" 2>/dev/null
epochs() {  # the seconds of every epoch but the first, one per line
  "$tessera" "$here/../training/lenet.lua" --data "$data" --epochs 3 --checkpoint "$tmp/ck" "$@" \
    2>/dev/null | sed -n 's/^Epoch [1-9][0-9]*: .*, \([0-9.]*\)s (.*/\1/p'
}
idx="" rec=""
for round in 1 2; do
  idx="$idx $(epochs)"
  rec="$rec $(epochs --rec "$tmp/mnist")"
done
median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
mi=$(median $idx)
mr=$(median $rec)
echo "lenet_epoch_idx: $mi s"
echo "lenet_epoch_records: $mr s"
awk -v a="$mr" -v b="$mi" 'BEGIN { printf "lenet_epoch_records_vs_idx: %.3f ratio\n", a / b }'
