"""PyTorch's side of conv_bench: the same convolution (3x3, 64 -> 64
channels, batch 32, 56x56, pad 1, float32, with bias), forward and backward
(gradients of data, weight and bias), on the CPU with 2 threads. Prints
`name: value unit` lines, medians of the runs after a warm-up.
    python3 scripts/bench/conv_torch.py [reps]
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
torch.set_num_threads(2)  # this machine's cores; the best setting measured
torch.manual_seed(0)
x = torch.ones(32, 64, 56, 56, requires_grad=True)
w = torch.full((64, 64, 3, 3), 0.01, requires_grad=True)
b = torch.zeros(64, requires_grad=True)
dy = torch.ones(32, 64, 56, 56)


def forward():
    return F.conv2d(x, w, b, padding=1)


def backward(y):
    torch.autograd.grad(y, (x, w, b), dy)


backward(forward())  # warm-up: oneDNN primitive creation, first touch
fwd, bwd = [], []
for _ in range(reps):
    t0 = time.perf_counter()
    y = forward()
    fwd.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    backward(y)
    bwd.append(time.perf_counter() - t0)
print("conv3x3_64_b32_56_forward_torch: %.2f ms" % (statistics.median(fwd) * 1e3))
print("conv3x3_64_b32_56_backward_torch: %.2f ms" % (statistics.median(bwd) * 1e3))
