"""PyTorch's side of linalg_vs_torch.sh: torch.linalg.cholesky and
torch.linalg.solve_triangular (lower, left) on 64 matrices of 256 x 256,
float32, on the CPU with 2 threads, as scripts/bench/linalg.lua. Prints
`name: value unit` lines, medians of the calls after a warm-up.
    python3 scripts/bench/linalg_torch.py [reps]
"""
import statistics
import sys
import time

import torch

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
torch.set_num_threads(2)
torch.manual_seed(0)
B, N = 64, 256
x = torch.rand(B, N, N) * 2 - 1
a = x @ x.transpose(1, 2) / N + torch.eye(N)
rhs = torch.rand(B, N, N) * 2 - 1
low = torch.linalg.cholesky(a)


def median_ms(fn):
    fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t) * 1e3


print("linalg_potrf_64x256_torch: %.3f ms" % median_ms(lambda: torch.linalg.cholesky(a)))
print("linalg_trsm_64x256_torch: %.3f ms"
      % median_ms(lambda: torch.linalg.solve_triangular(low, rhs, upper=False)))
