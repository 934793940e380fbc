"""The models of train_step.lua in PyTorch: one training step (forward,
cross-entropy, backward, SGD-momentum update), best of 1 and 2 threads,
printed as `name: value unit` lines.
    python3 scripts/bench/train_step_torch.py [steps]
"""
import sys
import time

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("torch_mlp_step_b100: unavailable")
    print("torch_lenet_step_b64: unavailable")
    sys.exit(0)

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50


def mlp():
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def lenet():
    return nn.Sequential(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))


def time_steps(make, shape):
    best = None
    for threads in (1, 2):
        torch.set_num_threads(threads)
        model = make()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        x = torch.rand(*shape)
        y = torch.randint(0, 10, (shape[0],))

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        for _ in range(5):
            step()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        ms = (time.perf_counter() - t0) / steps * 1e3
        best = ms if best is None else min(best, ms)
    return best


print("torch_mlp_step_b100: %.3f ms/step" % time_steps(mlp, (100, 784)))
print("torch_lenet_step_b64: %.3f ms/step" % time_steps(lenet, (64, 1, 28, 28)))
