"""Checks of a stored predictor state before anything is built from it.

A state comes from this cluster's weights files or from an export another cluster made
(import_predictor), so it is untrusted input: a matrix of the wrong shape would only fail
later, inside every prediction (a broadcast error), and a non-finite number would turn every
estimate into NaN. Each check raises ValueError naming the entry and what is wrong with it.
"""
import math

import numpy as np
import torch

from .data import CatalogData
from .features import WorkloadFeatures
from .structured import KERNEL_PARTS

#: The Gaussian-process variances of the structured predictor's P2 (structured.py).
RHO_KERNEL_KEYS = (*KERNEL_PARTS, "noise")
TAU_KERNEL_KEYS = ("common", "gpu_type", "setup", "config")


def catalog_from_state(snap) -> CatalogData:
    """The catalog snapshot of a state: names, features and configurations consistent with
    tau (W, C), rho and samples (W, W, G); rho NaN or in [0, 1], tau NaN or >= 0, at least one
    isolated throughput (a snapshot without one predicts 1 step/s for everything)."""
    if not isinstance(snap, dict):
        raise ValueError("the state has no catalog snapshot")
    workloads, gpu_types = _names(snap, "workloads"), _names(snap, "gpu_types")
    features = snap.get("features")
    if not isinstance(features, (list, tuple)) or len(features) != len(workloads):
        raise ValueError(f"catalog.features must be a list of {len(workloads)} feature rows")
    configs = snap.get("configs")
    if not isinstance(configs, (list, tuple)) or not all(_is_config(c, gpu_types) for c in configs):
        raise ValueError("catalog.configs must be [GPU type of catalog.gpu_types, GPUs >= 1, consolidated] rows")
    configs = [tuple(c) for c in configs]
    if len(set(configs)) != len(configs) or any((a, 1, True) not in configs for a in gpu_types):
        raise ValueError("catalog.configs must be distinct and hold (type, 1, true) for every GPU type")
    w, c, g = len(workloads), len(configs), len(gpu_types)
    tau, rho, samples = _array(snap, "tau", (w, c)), _array(snap, "rho", (w, w, g)), _array(snap, "samples", (w, w, g))
    if np.isinf(tau).any() or (tau < 0).any() or not np.isfinite(tau).any():
        raise ValueError("catalog.tau must hold isolated throughputs >= 0 (NaN where unknown), at least one")
    if np.isinf(rho).any() or (rho < 0).any() or (rho > 1).any():
        raise ValueError("catalog.rho must hold fractions in [0, 1] (NaN where unknown)")
    if not np.isfinite(samples).all() or (samples < 0).any():
        raise ValueError("catalog.samples must hold counts >= 0")
    return CatalogData(workloads=workloads, features=[_features(f, name) for f, name in zip(features, workloads)],
                       gpu_types=gpu_types, configs=configs, tau=tau, rho=rho, samples=samples)


def check_structured_state(state, gpu_types: int) -> dict:
    """The structured predictor's numbers: alpha, beta (G,) with beta > 0, a reference > 0,
    kernel variances >= 0 (the noise terms > 0, or P2's solve is singular), a train MAE
    (NaN when the catalog had no co-location records)."""
    if not isinstance(state, dict):
        raise ValueError("the state has no structured parameters")
    for key in ("alpha", "beta"):
        value = state.get(key)
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != (gpu_types,) or not torch.isfinite(value).all():
            raise ValueError(f"structured.{key} must be {gpu_types} finite numbers (one per GPU type)")
    if not (state["beta"] > 0).all():
        raise ValueError("structured.beta must be > 0")
    if not _is_number(state.get("reference")) or not state["reference"] > 0:
        raise ValueError("structured.reference must be a finite number > 0")
    for key, keys, positive in (("kernel", RHO_KERNEL_KEYS, "noise"), ("tau_kernel", TAU_KERNEL_KEYS, "config")):
        kernel = state.get(key)
        if not isinstance(kernel, dict) or set(kernel) != set(keys) or not all(
                _is_number(v) and v >= 0 for v in kernel.values()) or not kernel[positive] > 0:
            raise ValueError(f"structured.{key} must map {', '.join(keys)} to finite variances >= 0 ({positive} > 0)")
    train_mae = state.get("train_mae")
    if isinstance(train_mae, bool) or not isinstance(train_mae, (int, float)) or train_mae < 0 or math.isinf(train_mae):
        raise ValueError("structured.train_mae must be a number >= 0 (NaN when unknown)")
    return state


def check_net_weights(weights, name: str) -> int:
    """A network's state_dict: finite tensors; returns its token width (embed.0.weight columns)."""
    if not isinstance(weights, dict):
        raise ValueError(f"the state has no {name} weights")
    for key, value in weights.items():
        if not isinstance(value, torch.Tensor) or not torch.isfinite(value).all():
            raise ValueError(f"{name}.{key} must be a tensor of finite numbers")
    embed = weights.get("embed.0.weight")
    if embed is None or embed.dim() != 2:
        raise ValueError(f"{name} has no embed.0.weight matrix")
    return int(embed.shape[1])


def _names(snap: dict, key: str) -> list[str]:
    names = snap.get(key)
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"catalog.{key} must be a list of names")
    if len(set(names)) != len(names):
        raise ValueError(f"catalog.{key} has duplicates")
    return list(names)


def _is_config(config, gpu_types: list[str]) -> bool:
    return (isinstance(config, (list, tuple)) and len(config) == 3 and config[0] in gpu_types
            and isinstance(config[1], int) and not isinstance(config[1], bool) and config[1] >= 1
            and isinstance(config[2], bool))


def _array(snap: dict, key: str, shape: tuple) -> np.ndarray:
    value = snap.get(key)
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape or value.is_complex():
        raise ValueError(f"catalog.{key} must be a tensor of shape {shape}")
    return value.numpy().copy()


def _features(row, name: str) -> WorkloadFeatures:
    """[name, family, batch size, parameters, FLOPs per sample, compute density, memory
    intensity, communication overhead]; the numbers finite or None."""
    if not isinstance(row, (list, tuple)) or len(row) != 8 or row[0] != name or not isinstance(row[1], str):
        raise ValueError(f"catalog.features of {name!r} must be [{name!r}, family, batch size, 5 numbers]")
    if not all(v is None or _is_number(v) for v in row[2:]) or (row[2] is not None and not row[2] > 0):
        raise ValueError(f"catalog.features of {name!r} must hold finite numbers or None (a batch size > 0)")
    return WorkloadFeatures(*row)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
