"""A real training job for the device check: ResNet-50 or ResNet-18 at batch size 64 (the
catalog's "ResNet-50 (batch size 64)", "ResNet-18 (batch size 64)") training on synthetic
224x224 images, on the GPU the agent gives it
(CUDA_VISIBLE_DEVICES), reporting progress with the GOGH progress line protocol.

Synthetic data keeps the check free of downloads; the step (forward, backward, SGD update) is
the real one, so the agent's measured steps/s and NVML's power are those of real training.
`--model tiny` swaps in a small network, for a dry run on a machine without a GPU.
"""
import argparse
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for the progress helper
from telemetry.agent.progress import report


def model_for(name: str) -> nn.Module:
    if name in ("resnet50", "resnet18"):
        from torchvision import models

        return getattr(models, name)(weights=None)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 1000)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--model", choices=["resnet50", "resnet18", "tiny"], default="resnet50")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"device {device}: {torch.cuda.get_device_name(0) if device == 'cuda' else 'cpu'}", flush=True)
    model = model_for(args.model).to(device)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(args.batch_size, 3, 224, 224, device=device)
    labels = torch.randint(0, 1000, (args.batch_size,), device=device)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(1, args.steps + 1):
        optimiser.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimiser.step()
        if step % 10 == 0 or step == args.steps:
            if device == "cuda":
                torch.cuda.synchronize()  # a step counts when the GPU has done it, not when it was queued
            report(step, total=args.steps)
    print(f"final loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
