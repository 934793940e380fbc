#!/usr/bin/env bash
# linalg on 2 threads, float32: potrf and trsm on 64 matrices of 256 x 256
# from Lua (linalg.lua, what a script sees) against PyTorch's
# torch.linalg.cholesky / solve_triangular (linalg_torch.py); the same ops
# from C++ against OpenBLAS's LAPACK and BLAS called directly over the batch,
# and gemm2 on 1024^3 against dot and cblas_sgemm (linalg_bench). The sides
# alternate, `runs` times each; each figure is the best of its medians.
#   scripts/bench/linalg_vs_torch.sh [path/to/build] [runs]
set -euo pipefail
build=${1:-build}
runs=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
have_torch=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || have_torch=0
ours="" theirs="" direct=""
for _ in $(seq "$runs"); do
  ours+=$(TESSERA_OMP_THREADS=2 "$build/tessera" "$here/linalg.lua")$'\n'
  direct+=$(TESSERA_OMP_THREADS=2 "$build/tests/linalg_bench" 20 2)$'\n'
  if [ $have_torch = 1 ]; then theirs+=$(/usr/bin/python3 "$here/linalg_torch.py")$'\n'; fi
done
best() {  # best() TEXT NAME: the smallest value of NAME in TEXT
  echo "$1" | sed -n "s/^$2: \([0-9.]*\) .*/\1/p" | sort -g | head -1
}
for n in linalg_potrf_64x256 linalg_trsm_64x256; do echo "$n: $(best "$ours" "$n") ms"; done
for k in potrf_64x256_op potrf_64x256_lapack trsm_64x256_op trsm_64x256_blas gemm2_1024_op \
  gemm2_1024_dot gemm2_1024_openblas; do
  echo "linalg_$k: $(best "$direct" "linalg_$k") ms"
done
ratio() {  # ratio NAME A B: A / B
  awk -v a="$2" -v b="$3" -v n="$1" 'BEGIN { printf "%s: %.2f x\n", n, a / b }'
}
ratio linalg_potrf_64x256_vs_lapack "$(best "$direct" linalg_potrf_64x256_op)" \
  "$(best "$direct" linalg_potrf_64x256_lapack)"
ratio linalg_trsm_64x256_vs_blas "$(best "$direct" linalg_trsm_64x256_op)" \
  "$(best "$direct" linalg_trsm_64x256_blas)"
ratio linalg_gemm2_1024_vs_dot "$(best "$direct" linalg_gemm2_1024_op)" \
  "$(best "$direct" linalg_gemm2_1024_dot)"
ratio linalg_gemm2_1024_vs_openblas "$(best "$direct" linalg_gemm2_1024_op)" \
  "$(best "$direct" linalg_gemm2_1024_openblas)"
if [ $have_torch = 0 ]; then
  echo "linalg_vs_torch: unavailable"
  exit 0
fi
for n in linalg_potrf_64x256 linalg_trsm_64x256; do
  echo "${n}_torch: $(best "$theirs" "${n}_torch") ms"
  ratio "${n}_vs_torch" "$(best "$ours" "$n")" "$(best "$theirs" "${n}_torch")"
done
