"""The steps of gluon_step.lua in PyTorch eager (nn.Module, optim.SGD with
momentum, cross-entropy): LeNet at batch 64 and torchvision's ResNet-18 at
64x64, batch 16 (the same network as MXNet's resnet18_v1), best of 1 and 2
threads. With `memory` as the third argument, only the memory of the
ResNet-18 step on 2 threads, in this fresh process: the resident-set
high-water mark grown from before the model was made, as gluon_step.lua
measures it. Printed as `name: value unit` lines.
    python3 scripts/bench/gluon_step_torch.py [steps] [resnet_steps] [memory]
"""
import sys
import time

NAMES = ["torch_lenet_b64", "torch_resnet18_b16", "torch_resnet18_rss_growth"]
try:
    import torch
    import torch.nn as nn
    import torchvision
except ImportError:
    for n in NAMES:
        print(n + ": unavailable")
    sys.exit(0)

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
resnet_steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
memory_only = len(sys.argv) > 3 and sys.argv[3] == "memory"


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def lenet():
    return nn.Sequential(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))


def resnet18():
    return torchvision.models.resnet18(num_classes=1000)


def run(make, shape, classes, n):
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(*shape)
    y = torch.randint(0, classes, (shape[0],))

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t0) / n * 1e3


def best(make, shape, classes, n):
    times = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        times.append(run(make, shape, classes, n))
    return min(times)


if not memory_only:
    print("torch_lenet_b64: %.3f ms/step" % best(lenet, (64, 1, 28, 28), 10, steps))
    print("torch_resnet18_b16: %.3f ms/step" % best(resnet18, (16, 3, 64, 64), 1000,
                                                  resnet_steps))
    sys.exit(0)
torch.set_num_threads(2)
rss0 = status_kb("VmRSS")
run(resnet18, (16, 3, 64, 64), 1000, resnet_steps)
print("torch_resnet18_rss_growth: %.1f MB" % ((status_kb("VmHWM") - rss0) / 1024))
