"""A small job under the job contract (docs/jobs.md) for the Slurm executor's end-to-end tests
(tests/integration/test_slurm_executor.py): it counts steps with a short sleep each, checkpoints
every --checkpoint-every steps as a small JSON file (job.save_checkpoint), and on SIGTERM
checkpoints where it is and exits 75 ("preempted, resume me"). A resumed run loads its
checkpoint, checks that it holds the step the control plane named, and says so on its first
line; `--exit-code N --fail-at S` makes it end with status N after step S (a job that fails).

Its first line names the run: "started at step 0" or "resumed at step S from PATH", then the
GPUs Slurm gave it. Standard library and the contract only: the batch script runs it with the
control plane's Python, from a minimal environment.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root, for the contract
from telemetry.agent import contract


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--sleep", type=float, default=0.1, help="Seconds per step.")
    parser.add_argument("--checkpoint-every", type=int, default=10, help="Steps between checkpoints (0: never).")
    parser.add_argument("--exit-code", type=int, default=0, help="End with this status after --fail-at steps.")
    parser.add_argument("--fail-at", type=int, default=0)
    args = parser.parse_args()
    job = contract.Job.from_environment()  # SIGTERM from now on only sets job.preemption_requested
    step = 0
    if job.resume_checkpoint is not None:
        step = json.loads(job.resume_checkpoint.read_text())["step"]
        if step != job.resume_step:
            print(f"checkpoint {job.resume_checkpoint} holds step {step}, not {job.resume_step}", flush=True)
            return 2
        print(f"resumed at step {step} from {job.resume_checkpoint}", flush=True)
    else:
        print("started at step 0", flush=True)
    print(f"gpus {os.environ.get('CUDA_VISIBLE_DEVICES', '')}", flush=True)

    def save(at: int) -> None:
        job.save_checkpoint(at, lambda path: path.write_text(json.dumps({"step": at})), suffix=".json")

    while step < args.steps:
        time.sleep(args.sleep)
        step += 1
        job.progress(step, total=args.steps)
        if args.exit_code and step == args.fail_at:
            print(f"failing at step {step} with status {args.exit_code}", flush=True)
            return args.exit_code
        if job.preemption_requested or (args.checkpoint_every and step % args.checkpoint_every == 0):
            save(step)
        if job.preemption_requested:
            print(f"preempted at step {step}", flush=True)
            job.exit_preempted()
    print(f"done at step {step}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
