"""The Slurm executor: the round's decisions submitted with sbatch, signalled with scancel, and
read back with sinfo, squeue and sacct (docs/executors.md).

Slurm chooses what GOGH cannot ask for: the GPU indexes of a typed gres and the GPU a shard
lands on; the snapshot reads them back from each job's gres_detail. A job is submitted once,
pinned to its node, type and count: Slurm cannot change a submitted job's gres type (the job
stays pending for good), so a move is a cancel and a new submission, and Slurm is told never to
requeue a job itself (--no-requeue): whether a run starts again, and from which checkpoint, is
GOGH's decision.
"""
import os
import re
import shlex
import subprocess
from collections.abc import Collection

from ..base import PENDING, Executor, ExecutorError, Launch, Snapshot
from . import commands
from .parse import SACCT, SLURM_STATES, parse_sacct, parse_sinfo, parse_squeue

#: What sbatch gets of the control plane's own environment; the rest is the launch's, so that
#: nothing of the worker (its secrets, its SLURM_*/SBATCH_* settings) reaches a job by accident.
BASE_ENVIRONMENT = ("PATH", "HOME", "LANG", "SLURM_CONF")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
#: Variables sbatch reads as its own options (SBATCH_ACCOUNT, SBATCH_QOS, ...) and Slurm's own:
#: a job's environment may not set them, or it could choose its account or limits itself.
RESERVED_PREFIXES = ("SBATCH_", "SLURM_")
#: scancel's and squeue's answers for a job that has already ended (or that slurmctld has forgotten).
ALREADY_ENDED = ("Invalid job id specified", "already completing or completed")
_SLURM_ID = re.compile(r"[0-9]+")
_JOB_ID = re.compile(r"([0-9]+)(?:;\S+)?")  # sbatch --parsable: "<id>" or "<id>;<cluster>"


class SlurmExecutor(Executor):
    name = "slurm"
    pushes = True

    def __init__(self, *, job_prefix: str = "gogh", partition: str = "", bin_dir: str = "",
                 command_timeout_s: float = 15.0, runner: commands.Runner | None = None):
        self.job_prefix = job_prefix
        self.partition = partition
        self.bin_dir = bin_dir
        self.command_timeout_s = command_timeout_s
        self._runner = runner or subprocess.run

    def snapshot(self, *, waiting_on: Collection[str] = ()) -> Snapshot:
        """sinfo and squeue (squeue lists a job for MinJobAge seconds after its end); the runs
        waited on that squeue no longer lists are looked up in accounting, only those."""
        nodes = parse_sinfo(self._run(["sinfo", "--json"]), partition=self.partition)
        runs = parse_squeue(self._run(["squeue", "--json"]), self.job_prefix)
        listed = {run.external_id for run in runs}
        gone = sorted({str(i) for i in waiting_on if _SLURM_ID.fullmatch(str(i))} - listed, key=int)
        if gone:
            argv = [*shlex.split(SACCT), "-j", ",".join(gone)]
            wanted = set(gone)
            runs += [run for run in parse_sacct(self._run(argv), self.job_prefix) if run.external_id in wanted]
        return Snapshot(nodes=nodes, runs=runs)

    def submit(self, launch: Launch) -> str:
        """sbatch, with the batch script on its standard input and the job's environment as
        sbatch's own (--export=ALL): never on a command line or in a file others can read."""
        argv = self.sbatch_argv(launch)
        reserved = sorted(key for key in launch.environment if key.startswith(RESERVED_PREFIXES))
        if reserved:
            raise ExecutorError(shlex.join(argv), f"the job's environment sets Slurm's own {', '.join(reserved)}")
        stdout = self._run(argv, stdin=batch_script(launch.command),
                           env=self.sbatch_environment(launch))
        match = _JOB_ID.fullmatch(stdout.strip())
        if match is None:
            raise ExecutorError(shlex.join(argv), f"not a job id: {stdout.strip()[:200]!r}")
        return match[1]

    def sbatch_argv(self, launch: Launch) -> list[str]:
        if launch.shares:
            gres = f"shard:{launch.shares}"
        else:
            gres = f"gpu:{launch.gpu_type}:{launch.num_gpus}" if launch.gpu_type else f"gpu:{launch.num_gpus}"
        argv = ["sbatch", "--parsable", "--no-requeue", "-J", f"{self.job_prefix}-{launch.job_id}",
                "-w", launch.node, f"--gres={gres}"]
        if self.partition:
            argv += ["-p", self.partition]
        if launch.account:
            argv.append(f"--account={launch.account}")
        if launch.output_path:
            argv += ["-o", launch.output_path, "-e", launch.output_path]
        return [*argv, "--export=ALL"]

    @staticmethod
    def sbatch_environment(launch: Launch) -> dict[str, str]:
        environment = {key: os.environ[key] for key in BASE_ENVIRONMENT if key in os.environ}
        environment.setdefault("PATH", DEFAULT_PATH)
        return {**environment, **launch.environment}

    def signal(self, external_id: str, *, kill: bool) -> None:
        """The notice is SIGTERM to the batch script and all its processes (--full). A run whose
        script has not started has nothing to save, and scancel would retry a signal to it for
        many seconds: its notice cancels it."""
        try:
            if kill or self._waiting(external_id):
                self._run(["scancel", external_id])
            else:
                self._run(["scancel", "--signal=TERM", "--full", external_id])
        except ExecutorError as exc:
            if not any(answer in exc.message for answer in ALREADY_ENDED):
                raise

    def _waiting(self, external_id: str) -> bool:
        state = self._run(["squeue", "-h", "-t", "all", "-j", external_id, "-o", "%T"]).strip()
        return SLURM_STATES.get(state) == PENDING

    def _run(self, argv: list[str], *, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
        return commands.run(argv, bin_dir=self.bin_dir, timeout_s=self.command_timeout_s, stdin=stdin, env=env,
                            runner=self._runner)


def batch_script(command: str) -> str:
    """The run's batch script: its command run by bash as the agent runs it (`bash -c`), in
    place of the script (exec), so that the notice's SIGTERM reaches the command itself and
    its exit status is the run's."""
    return f"#!/bin/bash\nexec bash -c {shlex.quote(command)}\n"
