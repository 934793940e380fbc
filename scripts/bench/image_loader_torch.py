#!/usr/bin/python3
"""The peer of image_loader.lua: PyTorch's DataLoader over torchvision's
ImageFolder with the same transforms (RandomResizedCrop(224),
RandomHorizontalFlip, ToTensor, Normalize), batches of 64, WORKERS worker
processes (kept between epochs), shuffled; one warm-up epoch, then the best
of EPOCHS, in images per second.

    image_loader_torch.py FOLDER [WORKERS=2] [EPOCHS=3]
"""
import sys
import time

import torch
from torchvision import datasets, transforms


def main():
    folder = sys.argv[1]
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    loader = torch.utils.data.DataLoader(
        datasets.ImageFolder(folder, tf), batch_size=64, shuffle=True, num_workers=workers,
        drop_last=True, persistent_workers=workers > 0)

    def epoch():
        n, t0 = 0, time.perf_counter()
        for x, _ in loader:
            n += x.shape[0]
        return n / (time.perf_counter() - t0)

    epoch()
    best = max(epoch() for _ in range(epochs))
    print("torch_dataloader_%dw: %.1f images/s" % (workers, best))


if __name__ == "__main__":
    main()
