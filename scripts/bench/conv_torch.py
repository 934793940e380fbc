"""PyTorch's side of conv_bench: the same convolution (3x3, 64 -> 64
channels, batch 32, 56x56, pad 1, float32, with bias), forward and backward
(gradients of data, weight and bias), on the CPU with 2 threads. Prints
`name: value unit` lines, medians of the runs after a warm-up. With `cuda`
it runs on cuda:0 instead (cuDNN with its autotuner on, TF32 off, as
Tessera's defaults), waiting for the GPU after the forward and after the
backward as gpu_conv.lua does, for gpu_conv_vs_torch.sh.
    python3 scripts/bench/conv_torch.py [reps] [cpu|cuda]
"""
import statistics
import sys
import time

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
on_gpu = len(sys.argv) > 2 and sys.argv[2] == "cuda"
step_name = "torch_gpu_conv3x3_64_b32_56_step"
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    if not on_gpu:
        raise
    print("%s: unavailable (no torch)" % step_name)
    sys.exit(0)
if on_gpu and not torch.cuda.is_available():
    print("%s: unavailable (no GPU)" % step_name)
    sys.exit(0)

torch.set_num_threads(2)  # this machine's cores; the best setting measured
torch.manual_seed(0)
dev = torch.device("cuda:0" if on_gpu else "cpu")
if on_gpu:
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
x = torch.ones(32, 64, 56, 56, device=dev, requires_grad=True)
w = torch.full((64, 64, 3, 3), 0.01, device=dev, requires_grad=True)
b = torch.zeros(64, device=dev, requires_grad=True)
dy = torch.ones(32, 64, 56, 56, device=dev)


def wait():
    if on_gpu:
        torch.cuda.synchronize()


def forward():
    y = F.conv2d(x, w, b, padding=1)
    wait()
    return y


def backward(y):
    torch.autograd.grad(y, (x, w, b), dy)
    wait()


backward(forward())  # warm-up: primitive creation or cuDNN's search, first touch
fwd, bwd = [], []
for _ in range(reps):
    t0 = time.perf_counter()
    y = forward()
    fwd.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    backward(y)
    bwd.append(time.perf_counter() - t0)
f, bk = statistics.median(fwd) * 1e3, statistics.median(bwd) * 1e3
prefix = "gpu_" if on_gpu else ""
print("%sconv3x3_64_b32_56_forward_torch: %.2f ms" % (prefix, f))
print("%sconv3x3_64_b32_56_backward_torch: %.2f ms" % (prefix, bk))
if on_gpu:
    print("%s: %.3f ms" % (step_name, f + bk))
