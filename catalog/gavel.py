"""Reader of Gavel's measured throughputs (simulation_throughputs.json), into plain records.

No Django: the catalog's reference load, tests and benchmarks all read the file through here.
The file maps worker type -> job key -> partner key -> throughput, where keys are Python
tuple literals "('<Model> (batch size B)', scale_factor)" (read with ast.literal_eval, never
eval), the partner key "null" holds the job's isolated throughput, and any other partner key
holds a [this job, partner job] pair of throughputs for two jobs sharing the GPU(s).
A throughput of 0 means the configuration does not fit; such records are kept.
"""
import ast
import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from .measurement_record import MeasurementRecord

#: The copy shipped with the project (see catalog/reference/ATTRIBUTION.md).
GAVEL_THROUGHPUTS = Path(__file__).resolve().parent / "reference" / "gavel" / "simulation_throughputs.json"

#: Where Gavel's numbers come from, recorded on every reference measurement.
GAVEL_COMMIT = "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c"

UNCONSOLIDATED_SUFFIX = "_unconsolidated"
ISOLATED_KEY = "null"

#: What each family trains on, from the workload table of the Gavel paper (Narayanan et al., OSDI 2020).
FAMILY_DESCRIPTIONS = {
    "ResNet-18": "Image classification: ResNet-18 on CIFAR-10",
    "ResNet-50": "Image classification: ResNet-50 on ImageNet",
    "Transformer": "Translation: Transformer on Multi30k (German to English)",
    "LM": "Language modelling: LSTM on Wikitext-2",
    "Recommendation": "Recommendation: autoencoder on MovieLens (ML-20M)",
    "A3C": "Reinforcement learning: A3C on Pong",
    "CycleGAN": "Image-to-image translation: CycleGAN on monet2photo",
}

_BATCH_SIZE = re.compile(r"^(?P<family>.+?) \(batch size (?P<batch_size>\d+)\)$")


@dataclass(frozen=True, slots=True)
class GavelWorkload:
    name: str
    family: str
    batch_size: int | None


@dataclass(frozen=True, slots=True)
class GavelRecord:
    """One measured throughput: a job alone (partner None) or sharing with a partner job."""

    worker_type: str
    job_key: str
    partner_key: str
    workload: GavelWorkload
    gpu_type: str
    consolidated: bool
    num_gpus: int
    partner: GavelWorkload | None
    throughput: float
    partner_throughput: float | None

    @property
    def reference(self) -> str:
        """Where in the file the value sits: gavel:<worker_type>:<job key>:<partner key>."""
        return f"gavel:{self.worker_type}:{self.job_key}:{self.partner_key}"

    def measurement(self) -> MeasurementRecord:
        """The record's measurement as the predictors and the optimiser read it (source reference)."""
        return MeasurementRecord(
            workload=self.workload.name,
            gpu_type=self.gpu_type,
            throughput=self.throughput,
            num_gpus=self.num_gpus,
            consolidated=self.consolidated,
            partner=self.partner.name if self.partner else None,
            partner_throughput=self.partner_throughput,
            source="reference",
        )


class GavelFormatError(ValueError):
    """The file does not have the shape described in the module docstring."""


def parse_workload(name: str) -> GavelWorkload:
    """'ResNet-50 (batch size 64)' -> family ResNet-50, batch size 64; 'A3C' -> A3C, None."""
    match = _BATCH_SIZE.match(name)
    if match is None:
        return GavelWorkload(name=name, family=name, batch_size=None)
    return GavelWorkload(name=name, family=match["family"], batch_size=int(match["batch_size"]))


def parse_worker_type(worker_type: str) -> tuple[str, bool]:
    """'v100' -> ('v100', True); 'v100_unconsolidated' -> ('v100', False)."""
    if worker_type.endswith(UNCONSOLIDATED_SUFFIX):
        return worker_type.removesuffix(UNCONSOLIDATED_SUFFIX), False
    return worker_type, True


def read_throughputs(path: Path | str = GAVEL_THROUGHPUTS) -> list[GavelRecord]:
    """Every record of the file, in file order."""
    with open(path, encoding="utf-8") as handle:
        return parse_throughputs(json.load(handle))


def parse_throughputs(data: dict) -> list[GavelRecord]:
    """Records of already-decoded JSON; GavelFormatError if it is not shaped like Gavel's file."""
    records = []
    for worker_type, jobs in data.items():
        gpu_type, consolidated = parse_worker_type(worker_type)
        for job_key, partners in jobs.items():
            name, num_gpus = _parse_key(job_key)
            workload = parse_workload(name)
            for partner_key, value in partners.items():
                where = f"{worker_type} / {job_key} / {partner_key}"
                if partner_key == ISOLATED_KEY:
                    partner, throughput, partner_throughput = None, _throughput(value, where), None
                else:
                    partner_name, partner_gpus = _parse_key(partner_key)
                    if partner_gpus != num_gpus:
                        # The catalog has one num_gpus per record; Gavel pairs jobs of one size.
                        raise GavelFormatError(f"{where}: partner runs on {partner_gpus} GPUs, the job on {num_gpus}")
                    if not (isinstance(value, list) and len(value) == 2):
                        raise GavelFormatError(f"{where}: expected [this, partner] throughputs, got {value!r}")
                    partner = parse_workload(partner_name)
                    throughput, partner_throughput = (_throughput(v, where) for v in value)
                records.append(
                    GavelRecord(
                        worker_type=worker_type,
                        job_key=job_key,
                        partner_key=partner_key,
                        workload=workload,
                        gpu_type=gpu_type,
                        consolidated=consolidated,
                        num_gpus=num_gpus,
                        partner=partner,
                        throughput=throughput,
                        partner_throughput=partner_throughput,
                    )
                )
    return records


@functools.cache  # a few hundred distinct keys, each seen many times
def _parse_key(key: str) -> tuple[str, int]:
    try:
        name, scale_factor = ast.literal_eval(key)
    except (ValueError, SyntaxError, TypeError) as exc:
        raise GavelFormatError(f"{key!r} is not a ('<workload>', scale_factor) tuple") from exc
    if not (isinstance(name, str) and isinstance(scale_factor, int) and scale_factor >= 1):
        raise GavelFormatError(f"{key!r} is not a ('<workload>', scale_factor >= 1) tuple")
    return name, scale_factor


def _throughput(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise GavelFormatError(f"{where}: {value!r} is not a throughput (a finite number >= 0)")
    return float(value)
