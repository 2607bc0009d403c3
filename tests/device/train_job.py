"""A real training job for the device check: ResNet-50 or ResNet-18 at batch size 64 (the
catalog's "ResNet-50 (batch size 64)", "ResNet-18 (batch size 64)") training on synthetic
224x224 images, on the GPU the agent gives it (CUDA_VISIBLE_DEVICES), under the job contract
(telemetry.agent.contract, docs/jobs.md): it reports progress, resumes from
GOGH_RESUME_CHECKPOINT (model, optimiser and step), checkpoints every --checkpoint-every steps
and when SIGTERM comes, and then exits 75 ("preempted, resume me").

Synthetic data keeps the check free of downloads; the step (forward, backward, SGD update) is
the real one, so the agent's measured steps/s and NVML's power are those of real training.
`--model tiny` swaps in a small network, for a dry run on a machine without a GPU (CI runs it);
`--min-step-s` paces it, so that a test's preemption comes while it runs however fast the machine.
"""
import argparse
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for the contract
from telemetry.agent import contract


def model_for(name: str) -> nn.Module:
    if name in ("resnet50", "resnet18"):
        from torchvision import models

        return getattr(models, name)(weights=None)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 1000)
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--model", choices=["resnet50", "resnet18", "tiny"], default="resnet50")
    parser.add_argument("--checkpoint-every", type=int, default=200, help="Steps between checkpoints (0: never).")
    parser.add_argument("--min-step-s", type=float, default=0.0, help="Seconds each step takes at least (it sleeps).")
    args = parser.parse_args()
    job = contract.Job.from_environment()  # SIGTERM from now on only sets job.preemption_requested
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"device {device}: {torch.cuda.get_device_name(0) if device == 'cuda' else 'cpu'}", flush=True)
    torch.manual_seed(0)
    model = model_for(args.model).to(device)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = 0
    if job.resume_checkpoint is not None:
        state = torch.load(job.resume_checkpoint, map_location=device)
        model.load_state_dict(state["model"])
        optimiser.load_state_dict(state["optimiser"])
        step = state["step"]
        print(f"resumed at step {step} from {job.resume_checkpoint}", flush=True)
    images = torch.randn(args.batch_size, 3, 224, 224, device=device)
    labels = torch.randint(0, 1000, (args.batch_size,), device=device)
    loss_fn, loss = nn.CrossEntropyLoss(), None

    def save(at: int) -> None:
        state = {"model": model.state_dict(), "optimiser": optimiser.state_dict(), "step": at}
        job.save_checkpoint(at, lambda path: torch.save(state, path))

    job.progress(step, total=args.steps)  # where this run starts
    while step < args.steps:
        began = time.monotonic()
        optimiser.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimiser.step()
        time.sleep(max(0.0, args.min_step_s - (time.monotonic() - began)))
        step += 1
        stopping = job.preemption_requested
        if step % 10 == 0 or step == args.steps or stopping:
            if device == "cuda":
                torch.cuda.synchronize()  # a step counts when the GPU has done it, not when it was queued
            job.progress(step, total=args.steps)
        if stopping or (args.checkpoint_every and step % args.checkpoint_every == 0 and step < args.steps):
            save(step)
        if stopping:
            print(f"preempted at step {step}", flush=True)
            job.exit_preempted()
    print(f"final loss {loss.item():.3f}" if loss is not None else "nothing left to do", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
