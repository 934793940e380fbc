"""PyTorch's side of lstm_vs_torch.sh: nn.LSTM with 2 layers of 512 units
over a sequence of 35 and a batch of 32 (input 512, float32), forward and
backward (gradients of the input, the parameters and both initial states),
on the CPU with 2 threads, as scripts/bench/lstm.lua. Prints `name: value
unit` lines, medians of the runs after a warm-up. With `cuda` it runs on
cuda:0 instead (cuDNN's LSTM, TF32 off, as Tessera's default), waiting for
the GPU after the forward and after the backward as lstm.lua does, for
gpu_lstm_vs_torch.sh.
    python3 scripts/bench/lstm_torch.py [reps] [cpu|cuda]
"""
import statistics
import sys
import time

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
on_gpu = len(sys.argv) > 2 and sys.argv[2] == "cuda"
step_name = "torch_gpu_lstm2x512_t35_b32_step"
try:
    import torch
except ImportError:
    if not on_gpu:
        raise
    print("%s: unavailable (no torch)" % step_name)
    sys.exit(0)
if on_gpu and not torch.cuda.is_available():
    print("%s: unavailable (no GPU)" % step_name)
    sys.exit(0)

torch.set_num_threads(2)
torch.manual_seed(0)
dev = torch.device("cuda:0" if on_gpu else "cpu")
if on_gpu:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
T, N, I, H, L = 35, 32, 512, 512, 2
lstm = torch.nn.LSTM(I, H, L).to(dev)
x = (torch.rand(T, N, I) * 0.2 - 0.1).to(dev).requires_grad_()
h0 = torch.zeros(L, N, H, device=dev, requires_grad=True)
c0 = torch.zeros(L, N, H, device=dev, requires_grad=True)
dy = torch.ones(T, N, H, device=dev)
inputs = (x, h0, c0) + tuple(lstm.parameters())


def wait():
    if on_gpu:
        torch.cuda.synchronize()


def forward():
    y = lstm(x, (h0, c0))[0]
    wait()
    return y


def backward(y):
    torch.autograd.grad(y, inputs, dy)
    wait()


backward(forward())
fwd, bwd = [], []
for _ in range(reps):
    t0 = time.perf_counter()
    y = forward()
    t1 = time.perf_counter()
    backward(y)
    fwd.append(t1 - t0)
    bwd.append(time.perf_counter() - t1)
f, b = statistics.median(fwd) * 1e3, statistics.median(bwd) * 1e3
prefix = "gpu_" if on_gpu else ""
print("%slstm2x512_t35_b32_forward_torch: %.2f ms" % (prefix, f))
print("%slstm2x512_t35_b32_backward_torch: %.2f ms" % (prefix, b))
if on_gpu:
    print("%s: %.2f ms" % (step_name, f + b))
