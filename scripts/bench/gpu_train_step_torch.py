"""The training steps of gpu_train_step.lua in PyTorch eager on cuda:0:
LeNet (batch 64) and torchvision's ResNet-18 (224x224, batch 32), forward,
cross-entropy, backward, SGD-momentum update, random data on the GPU,
float32 with TF32 off (as Tessera's default) and cuDNN's autotuner on (as
Tessera's cudnn_tune), synchronised only after the timed loop, as
Tessera's waitall. Printed as `name: value unit` lines.
    python3 scripts/bench/gpu_train_step_torch.py [steps] [resnet_steps]
"""
import sys
import time

names = ("torch_gpu_lenet_step_b64", "torch_gpu_resnet18_step_b32")
try:
    import torch
    import torch.nn as nn
    import torchvision
except ImportError:
    for n in names:
        print("%s: unavailable (no torch/torchvision)" % n)
    sys.exit(0)
if not torch.cuda.is_available():
    for n in names:
        print("%s: unavailable (no GPU)" % n)
    sys.exit(0)

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
resnet_steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = torch.device("cuda:0")


def lenet():
    return nn.Sequential(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))


def time_steps(make, shape, classes, n):
    torch.manual_seed(1)
    model = make().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(*shape, device=dev)
    y = torch.randint(0, classes, (shape[0],), device=dev)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e3


print("%s: %.3f ms/step" % (names[0], time_steps(lenet, (64, 1, 28, 28), 10, steps)))
print("%s: %.3f ms/step" % (names[1], time_steps(torchvision.models.resnet18,
                                                  (32, 3, 224, 224), 1000, resnet_steps)))
