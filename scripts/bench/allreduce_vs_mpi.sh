#!/usr/bin/env bash
# All-reduce of 1, 16 and 64 MB of float32 over 2 and 3 processes: through
# mx.kv 'dist_sync' (kv:pushpull), through the communication lane alone,
# and MPI_Allreduce called directly (allreduce_mpi.c, built here with mpicc)
# in the same loop, one after the other on the same machine. Prints each
# figure and the ratios to MPI's throughput.
#   scripts/bench/allreduce_vs_mpi.sh [path/to/tessera]
set -euo pipefail
tessera=${1:-build/tessera}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 "$here/allreduce_mpi.c" -o "$work/allreduce_mpi"
root=()
if [ "$(id -u)" = 0 ]; then root=(--allow-run-as-root); fi
for np in 2 3; do
  mpirun -np "$np" --oversubscribe "${root[@]}" "$work/allreduce_mpi" 1 16 64 >"$work/mpi.txt"
  "$tessera" --launch "$np" "$here/allreduce_kv.lua" 1 16 64 >"$work/kv.txt"
  cat "$work/mpi.txt" "$work/kv.txt"
  for mb in 1 16 64; do
    mpi=$(awk -v k="mpi_allreduce_${mb}MB_np${np}:" '$1 == k {print $2}' "$work/mpi.txt")
    for who in kv lane; do
      ours=$(awk -v k="${who}_allreduce_${mb}MB_np${np}:" '$1 == k {print $2}' "$work/kv.txt")
      awk -v a="$ours" -v b="$mpi" -v n="${who}_vs_mpi_allreduce_${mb}MB_np${np}" \
        'BEGIN {printf "%s: %.2f x\n", n, a / b}'
    done
  done
done
