"""PyTorch's side of lstm_vs_torch.sh: nn.LSTM with 2 layers of 512 units
over a sequence of 35 and a batch of 32 (input 512, float32), forward and
backward (gradients of the input, the parameters and both initial states),
on the CPU with 2 threads, as scripts/bench/lstm.lua. Prints `name: value
unit` lines, medians of the runs after a warm-up.
    python3 scripts/bench/lstm_torch.py [reps]
"""
import statistics
import sys
import time

import torch

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
torch.set_num_threads(2)
torch.manual_seed(0)
T, N, I, H, L = 35, 32, 512, 512, 2
lstm = torch.nn.LSTM(I, H, L)
x = (torch.rand(T, N, I) * 0.2 - 0.1).requires_grad_()
h0 = torch.zeros(L, N, H, requires_grad=True)
c0 = torch.zeros(L, N, H, requires_grad=True)
dy = torch.ones(T, N, H)
inputs = (x, h0, c0) + tuple(lstm.parameters())


def forward():
    return lstm(x, (h0, c0))[0]


def backward(y):
    torch.autograd.grad(y, inputs, dy)


backward(forward())
fwd, bwd = [], []
for _ in range(reps):
    t0 = time.perf_counter()
    y = forward()
    t1 = time.perf_counter()
    backward(y)
    fwd.append(t1 - t0)
    bwd.append(time.perf_counter() - t1)
print("lstm2x512_t35_b32_forward_torch: %.2f ms" % (statistics.median(fwd) * 1e3))
print("lstm2x512_t35_b32_backward_torch: %.2f ms" % (statistics.median(bwd) * 1e3))
