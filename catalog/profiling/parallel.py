"""Cases of several processes: a co-located pair (two processes on one GPU, started together)
and a data-parallel job (one rank per GPU, DistributedDataParallel over NCCL; gloo on a CPU).

Each process puts its result on a queue; the first failure ends the case at once (the other
processes are killed: a data-parallel rank left alone would wait in its all-reduce forever),
and so does a process that dies without a result (a crash in native code).
"""
import multiprocessing
import queue as queue_module
import socket

import torch

from .cases import Case
from .worker import Options, failure, measure_process, prepare


def context(options: Options):
    """fork on a CPU (fast: torch is already imported); spawn on a GPU, where a forked child
    of a process that touched CUDA cannot use it. A forked case inherits the parent's imports,
    so the parent imports once what every optimiser's first construction imports (torch._dynamo,
    some seconds) instead of each case importing it again."""
    if options.device == "cpu":
        import torch._dynamo  # noqa: F401
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def pair(case: Case, options: Options) -> dict:
    ctx = context(options)
    started = ctx.Barrier(2)
    done = [ctx.Event(), ctx.Event()]
    roles = [(case.family, case.batch_size), (case.partner_family, case.partner_batch_size)]
    results = _collect(ctx, [(_pair_member, (role, family, batch, options, started, done))
                             for role, (family, batch) in enumerate(roles)])
    if "error" in results:
        return results
    mine, partner = results[0], results[1]
    return {**mine, "partner_throughput": partner["throughput"]}


def _pair_member(role, family, batch, options, started, done, queue) -> None:
    prepare(options)
    try:
        result = measure_process(family, batch, options, power_gpus=[0] if role == 0 else None, started=started,
                                 done=(done[role], done))
    except Exception as exc:
        result = failure(exc)
    queue.put((role, result))


def data_parallel(case: Case, options: Options) -> dict:
    ctx = context(options)
    address = f"tcp://127.0.0.1:{_free_port()}"
    results = _collect(ctx, [(_rank, (rank, case, options, address)) for rank in range(case.num_gpus)])
    if "error" in results:
        return results
    first = results[0]
    memories = [r["memory_gb"] for r in results.values() if r["memory_gb"] is not None]
    return {**first, "memory_gb": max(memories) if memories else None}


def _rank(rank, case, options, address, queue) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    prepare(options)
    try:
        cuda = options.device == "cuda"
        if cuda:
            torch.cuda.set_device(rank)
        dist.init_process_group("nccl" if cuda else "gloo", init_method=address, rank=rank,
                                world_size=case.num_gpus)
        flag_device = f"cuda:{rank}" if cuda else "cpu"

        def agree(value):
            flag = torch.tensor([float(value)], device=flag_device)
            dist.broadcast(flag, 0)
            return type(value)(flag.item())

        def wrap(module):
            return DistributedDataParallel(module, device_ids=[rank] if cuda else None)

        result = measure_process(case.family, case.batch_size, options, gpu=rank, wrap=wrap, agree=agree,
                                 power_gpus=list(range(case.num_gpus)) if rank == 0 else None)
        dist.destroy_process_group()
    except Exception as exc:
        result = failure(exc)
    queue.put((rank, result))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _collect(ctx, targets) -> dict:
    """{index: result} of every process, or the first failure."""
    queue = ctx.Queue()
    processes = [ctx.Process(target=target, args=(*args, queue), daemon=True) for target, args in targets]
    for process in processes:
        process.start()
    results: dict = {}
    try:
        while len(results) < len(processes):
            try:
                index, result = queue.get(timeout=0.2)
            except queue_module.Empty:
                dead = [p for p in processes if p.exitcode not in (None, 0)]
                if dead:
                    return {"error": "error", "message": f"a process of the case exited with status {dead[0].exitcode}"}
                continue
            if "error" in result:
                return result
            results[index] = result
        return results
    finally:
        for process in processes:
            if process.is_alive() and len(results) < len(processes):
                process.kill()
            process.join()
