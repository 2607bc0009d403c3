"""Writes of GPU samples: agents' batches in, per-minute aggregates out.

Each GPU's health signals are kept as its latest (Gpu.health, docs/gpu_health.md).

A batch is all or nothing: one bad sample refuses the whole batch (400, every bad item named
by its path, e.g. `samples[3].gpu`), like a registration or a measurement import. The agent
builds samples from NVML and turns unreadable values into null, so a bad item means a broken
or foreign agent, and a partly stored batch would only hide that; a batch naming a GPU of a
node that is not the caller's is refused with 403.
"""
from datetime import timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Avg, Count, Max
from django.db.models.functions import TruncMinute
from django.utils import timezone

from catalog.measurement_limits import MAX_CLOCK_AHEAD

from .. import live
from ..gpu_health import health_of
from ..models import Gpu, GpuSample, GpuSampleMinute, Node
from .access import check_is_agent, may_report

#: A sample stamped further ahead than this is refused: the agent's clock is wrong (the same
#: skew a catalog measurement may have).
MAX_CLOCK_AHEAD_S = int(MAX_CLOCK_AHEAD.total_seconds())
#: A sample stamped further back than this is refused too. An agent's backlog after an outage
#: is at most about a day old (its default buffer: a day of one GPU at 1 Hz), so a week leaves
#: room for a long outage and larger buffers; older than that, the node's clock was never set
#: (1970 after a dead RTC battery, year 1 from a bad parse). Such samples would sit in the
#: per-minute aggregates at dates no page shows, and a week-old reading says nothing about the
#: cluster now. The agent drops a refused batch and uploads oldest first, so after an outage of
#: more than a week it loses the too-old batches (and the one straddling the line) and then
#: delivers the rest.
MAX_SAMPLE_AGE_S = 7 * 24 * 3600
_MEASURES = [
    "power_w", "utilization", "memory_used_mb", "sm_clock_mhz", "temperature_c",
    "ecc_corrected", "ecc_uncorrected", "retired_pages",
]


@transaction.atomic
def gpu_samples_ingest(*, agent_user, samples: list[dict], dropped: int | None = None, now=None) -> int:
    """Store a batch of samples (dicts: gpu = UUID, ts, and the _MEASURES, None where unread);
    how many were stored. A sample already stored (same GPU and instant) is not stored again,
    so an agent may resend a batch whose answer it lost (the resend answers 0); of several
    samples of one GPU and instant in a batch, only the first is stored and counted. Stored
    pairs are found with one query for the whole batch, not one per sample. `dropped`: the
    agent's count of samples lost to its full buffer, kept on the batch's nodes."""
    check_is_agent(agent_user)
    now = now or timezone.now()
    gpus = {gpu.uuid: gpu for gpu in Gpu.objects.select_related("node").filter(uuid__in={s["gpu"] for s in samples})}
    foreign = sorted({gpu.node.hostname for gpu in gpus.values() if not may_report(gpu.node, agent_user)})
    if foreign:
        raise PermissionDenied(
            f"The batch holds GPUs of node(s) {', '.join(foreign)}, which this account did not register."
        )
    errors = {}
    for position, sample in enumerate(samples):
        if sample["gpu"] not in gpus:
            errors[f"samples[{position}].gpu"] = [f"No GPU with UUID {sample['gpu']} is registered."]
        if sample["ts"] > now + timedelta(seconds=MAX_CLOCK_AHEAD_S):
            errors[f"samples[{position}].ts"] = [
                f"More than {MAX_CLOCK_AHEAD_S} s in the future; is the node's clock set?"
            ]
        elif sample["ts"] < now - timedelta(seconds=MAX_SAMPLE_AGE_S):
            days = MAX_SAMPLE_AGE_S // 86400
            errors[f"samples[{position}].ts"] = [f"More than {days} days in the past; is the node's clock set?"]
    if errors:
        raise ValidationError(errors)
    rows = _new_rows(gpus, samples)
    # ignore_conflicts still: a concurrent upload of the same samples may commit first.
    GpuSample.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    _keep_health(gpus, samples, {(row.gpu_id, row.ts) for row in rows})
    live.gpus_changed({row.gpu_id for row in rows})  # once per GPU with a new sample, however many; none on a resend
    if dropped is not None:  # written only when it changed (the nodes came with the GPUs): most batches drop nothing
        changed = {gpu.node_id for gpu in gpus.values() if gpu.node.samples_dropped != dropped}
        if changed:
            Node.objects.filter(pk__in=changed).update(samples_dropped=dropped)
    return len(rows)


def _new_rows(gpus: dict[str, Gpu], samples: list[dict]) -> list[GpuSample]:
    """The samples to store: the first of each (GPU, instant) that is not stored yet."""
    stored = set(
        GpuSample.objects.filter(gpu__in=gpus.values(), ts__in={s["ts"] for s in samples}).values_list("gpu_id", "ts")
    )
    rows = []
    for sample in samples:
        key = (gpus[sample["gpu"]].pk, sample["ts"])
        if key not in stored:
            stored.add(key)
            rows.append(GpuSample(gpu=gpus[sample["gpu"]], ts=sample["ts"], **{m: sample.get(m) for m in _MEASURES}))
    return rows


@transaction.atomic
def gpu_samples_downsample(*, retention_s: float, now=None) -> int:
    """Fold raw samples older than `retention_s` (whole minutes only) into per-minute aggregates
    and delete them; the number of raw rows folded. Run by Celery beat.

    A minute that already has an aggregate (samples that arrived late, after their minute was
    folded) is merged into it, weighting means by sample counts."""
    now = now or timezone.now()
    cutoff = (now - timedelta(seconds=retention_s)).replace(second=0, microsecond=0)
    old = GpuSample.objects.filter(ts__lt=cutoff)
    groups = list(
        old.annotate(minute=TruncMinute("ts"))
        .values("gpu_id", "minute")
        .annotate(
            samples=Count("id"), power_w_mean=Avg("power_w"), power_w_max=Max("power_w"),
            utilization_mean=Avg("utilization"), memory_used_mb_max=Max("memory_used_mb"),
            sm_clock_mhz_mean=Avg("sm_clock_mhz"), temperature_c_max=Max("temperature_c"),
            ecc_corrected_max=Max("ecc_corrected"), ecc_uncorrected_max=Max("ecc_uncorrected"),
            retired_pages_max=Max("retired_pages"),
        )
        .order_by()
    )
    if not groups:
        return 0
    existing = {
        (row.gpu_id, row.minute): row
        for row in GpuSampleMinute.objects.select_for_update().filter(
            gpu_id__in={g["gpu_id"] for g in groups}, minute__in={g["minute"] for g in groups}
        )
    }
    new, merged = [], []
    for group in groups:
        row = existing.get((group["gpu_id"], group["minute"]))
        if row is None:
            new.append(GpuSampleMinute(**group))
        else:
            _merge(row, group)
            merged.append(row)
    GpuSampleMinute.objects.bulk_create(new, batch_size=500)
    GpuSampleMinute.objects.bulk_update(merged, [f for f in _aggregate_fields() if f != "minute"], batch_size=500)
    folded, _ = old.delete()
    # Pages show each GPU's newest raw sample: it changed only for GPUs that have none left.
    gpu_ids = {group["gpu_id"] for group in groups}
    live.gpus_changed(gpu_ids - set(GpuSample.objects.filter(gpu_id__in=gpu_ids).values_list("gpu_id", flat=True)))
    return folded


def gpu_sample_minutes_prune(*, retention_s: float, now=None) -> int:
    """Delete per-minute aggregates older than `retention_s`; how many. Run by Celery beat after
    each downsampling, so that a GPU's stored history is bounded too (docs/telemetry.md,
    "Storage"): one fast DELETE, nothing refers to the rows."""
    now = now or timezone.now()
    deleted, _ = GpuSampleMinute.objects.filter(minute__lt=now - timedelta(seconds=retention_s)).delete()
    return deleted


def _keep_health(gpus: dict[str, Gpu], samples: list[dict], new: set[tuple]) -> None:
    """Each GPU's health (gpu_health.health_of) from its newest sample among the new ones,
    written where it changed (a batch of steady readings writes nothing)."""
    newest: dict[str, dict] = {}
    for sample in samples:
        uuid = sample["gpu"]
        if (gpus[uuid].pk, sample["ts"]) in new and (uuid not in newest or sample["ts"] > newest[uuid]["ts"]):
            newest[uuid] = sample
    changed = []
    for uuid, sample in newest.items():
        gpu = gpus[uuid]
        health = health_of(sample, gpu.health)
        if health != gpu.health:
            gpu.health = health
            changed.append(gpu)
    Gpu.objects.bulk_update(changed, ["health"], batch_size=500)


def _aggregate_fields() -> list[str]:
    return [f.name for f in GpuSampleMinute._meta.concrete_fields if f.name not in ("id", "gpu")]


def _merge(row: GpuSampleMinute, group: dict) -> None:
    total = row.samples + group["samples"]
    for field in _aggregate_fields():
        ours, theirs = getattr(row, field), group[field]
        if field in ("minute", "samples") or theirs is None:
            continue
        if ours is None:
            setattr(row, field, theirs)
        elif field.endswith("_mean"):
            setattr(row, field, (ours * row.samples + theirs * group["samples"]) / total)
        else:
            setattr(row, field, max(ours, theirs))
    row.samples = total
