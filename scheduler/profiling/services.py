"""Writes of profiling campaigns: start one (a trigger), its jobs, the results its jobs report,
and its end. Every function runs in one transaction, with the GPU type's row (start) or the
campaign's row (results, ends) locked, so two reports never settle the same case twice.

Errors: ValidationError keyed by field (the API's 400), CampaignOpen when the type already has
an open campaign (409). A refusal writes nothing.
"""
from collections import Counter

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from catalog.measurement_limits import limit_problems
from catalog.models import GpuType, Measurement, MeasurementSource, Workload
from catalog.services.measurements import measurement_record
from gogh_web.activity import announce
from gogh_web.outbox.services import outbox_enqueue
from telemetry.models import Gpu, GpuState

from ..lifecycle import TERMINAL
from ..models import CampaignState, CampaignTrigger, Job, Membership, ProfilingCampaign, Tenant
from . import live, suite
from .lines import BadLine, Result, read_line

OPEN_STATES = (CampaignState.PENDING, CampaignState.RUNNING)
#: The account and tenant that own campaign jobs: GOGH's own work, apart from every user's.
SYSTEM_USERNAME = "gogh-profiling"
SYSTEM_TENANT_SLUG = "gogh-system"
#: Cases of one GPU count per job: a preempted job runs its cases again (the suite keeps no
#: checkpoint), so a few per job bound what a preemption throws away, and the rest save a
#: process start (PyTorch's import) per case.
CASES_PER_JOB = 4
#: Below every user's job; as probes they are admitted after all of them anyway.
CAMPAIGN_PRIORITY = -100
#: A probe's T_min is not used (every option of a probe counts as meeting it); the column needs > 0.
CAMPAIGN_MIN_THROUGHPUT = 1e-6
CAMPAIGN_GRACE_S = 30


class CampaignOpen(Exception):
    """The GPU type already has a pending or running campaign."""


def system_owner():
    """The account campaign jobs belong to, in tenant gogh-system; both made on first use. It
    has no usable password and no staff rights: nobody signs in as it."""
    tenant, _ = Tenant.objects.get_or_create(
        slug=SYSTEM_TENANT_SLUG, defaults={"name": "GOGH system", "description": "GOGH's own jobs (profiling)."}
    )
    user, created = get_user_model().objects.get_or_create(username=SYSTEM_USERNAME)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    Membership.objects.get_or_create(user=user, defaults={"tenant": tenant})
    return user


@transaction.atomic
def campaign_start(*, gpu_type: GpuType, trigger: str, requested_by=None, driver_version: str = "",
                   gpu_count: int | None = None, now=None) -> ProfilingCampaign:
    """A campaign of the suite's cases for `gpu_type` and its jobs. The cases are those of the
    type's largest node (`gpu_count` GPUs of it; default: counted now). Cases whose workloads the
    catalog lacks are recorded as failed at once; none left to run is a refusal."""
    now = now or timezone.now()
    gpu_type = GpuType.objects.select_for_update().get(pk=gpu_type.pk)
    if ProfilingCampaign.objects.filter(gpu_type=gpu_type, state__in=OPEN_STATES).exists():
        raise CampaignOpen(f"GPU type {gpu_type.name} already has an open profiling campaign; wait for it to end.")
    gpu_count = gpu_count or largest_node_count(gpu_type)
    if not gpu_count:
        raise ValidationError({"gpu_type": [
            f"No node has a healthy {gpu_type.name} GPU: a campaign runs on the type's own GPUs."
        ]})
    try:
        version, cases = suite.suite_version(), suite.cases_for(gpu_count)
    except ImportError as exc:
        raise ValidationError({"gpu_type": [f"The benchmark suite is not installed here ({exc})."]}) from exc
    known = set(Workload.objects.filter(
        name__in={name for case in cases for name in (case.workload, case.partner) if name}
    ).values_list("name", flat=True))
    runnable = [case for case in cases if case.workload in known and (case.partner is None or case.partner in known)]
    if not runnable:
        raise ValidationError({"gpu_type": [
            "None of the suite's cases has its workloads in the catalog (run manage.py load_reference_catalog)."
        ]})
    failures = [
        {"case": case.name, "kind": "error", "message": "Its workload is not in the catalog."}
        for case in cases if case not in runnable
    ]
    campaign = ProfilingCampaign.objects.create(
        gpu_type=gpu_type, trigger=trigger, suite_version=version,
        driver_version=driver_version or _common_driver(gpu_type),
        cases=[case.name for case in cases], failures=failures, requested_by=requested_by,
        message=f"{len(cases)} cases for {gpu_count} GPU(s) of one node",
    )
    _submit_jobs(campaign, runnable)
    live.gpu_type_profile_changed(gpu_type.name)
    announce("profiling campaign %s for %s (%s): %d cases", campaign.pk, gpu_type.name, trigger, len(cases))
    return campaign


@transaction.atomic
def campaign_cancel(*, campaign: ProfilingCampaign, by, now=None) -> ProfilingCampaign:
    """Stop an open campaign: it ends `cancelled` (the type is not marked profiled; what its jobs
    measured stays in the catalog) and its jobs that have not ended are cancelled. ValidationError
    (keyed `state`) for a campaign that has ended: a refusal writes nothing."""
    from ..services import job_cancel  # scheduler.services ends campaigns' jobs through this package

    now = now or timezone.now()
    campaign = ProfilingCampaign.objects.select_for_update().select_related("gpu_type").get(pk=campaign.pk)
    if campaign.state not in OPEN_STATES:
        raise ValidationError({"state": [f"The campaign has ended ({campaign.state}); there is nothing to cancel."]})
    campaign.state = CampaignState.CANCELLED
    campaign.finished_at = now
    campaign.message = (f"Cancelled by {by.get_username()}: "
                        f"{len(campaign.cases_done)} of {len(campaign.cases)} cases measured.")
    campaign.save()
    for job in campaign.jobs.exclude(state__in=[state.value for state in TERMINAL]):
        job_cancel(job=job, by=by, reason="Its profiling campaign was cancelled.")
    live.gpu_type_profile_changed(campaign.gpu_type.name)
    announce("profiling campaign %s for %s cancelled by %s", campaign.pk, campaign.gpu_type.name, by.get_username())
    return campaign


def largest_node_count(gpu_type: GpuType) -> int:
    """The most healthy GPUs of the type on one node (0: none)."""
    counts = Counter(
        Gpu.objects.filter(gpu_type=gpu_type, state=GpuState.HEALTHY).values_list("node_id", flat=True)
    )
    return max(counts.values(), default=0)


def _common_driver(gpu_type: GpuType) -> str:
    """The driver most nodes with the type report ("" when none does): what an admin's campaign
    will most likely run under."""
    drivers = Counter(
        Gpu.objects.filter(gpu_type=gpu_type, state=GpuState.HEALTHY).exclude(node__driver_version="")
        .values_list("node__driver_version", flat=True)
    )
    return drivers.most_common(1)[0][0] if drivers else ""


def _submit_jobs(campaign: ProfilingCampaign, cases: list) -> None:
    """Jobs of up to CASES_PER_JOB consecutive cases of one GPU count, submitted as any job is
    (P1, a round), owned by the system account."""
    from ..services import job_submit  # scheduler.services ends campaigns' jobs through this package

    owner = system_owner()
    workloads = {w.name: w for w in Workload.objects.filter(name__in={case.workload for case in cases})}
    for group in _groups(cases):
        names = [case.name for case in group]
        job = job_submit(
            owner=owner, workload=workloads[group[0].workload], min_throughput=CAMPAIGN_MIN_THROUGHPUT,
            max_gpus=group[0].num_gpus, priority=CAMPAIGN_PRIORITY, total_steps=len(group),
            preemption_grace_s=CAMPAIGN_GRACE_S, name=f"profiling {campaign.gpu_type.name}: {names[0]}"[:120],
            command=suite.command(names, campaign.gpu_type.name),
        ).job
        Job.objects.filter(pk=job.pk).update(campaign=campaign, profiling_cases=names)


def _groups(cases: list) -> list[list]:
    groups: list[list] = []
    for case in cases:
        if groups and groups[-1][0].num_gpus == case.num_gpus and len(groups[-1]) < CASES_PER_JOB:
            groups[-1].append(case)
        else:
            groups.append([case])
    return groups


# --- Triggers from nodes


def campaigns_for_node(*, node) -> list[ProfilingCampaign]:
    """The campaigns a node's report starts: for each GPU type it has, one when the catalog has
    no measurement of the type (trigger new_type; once per suite version, an admin may ask
    again), or when the node's driver differs from the one the type was profiled with (trigger
    driver_change; once per driver version). A type with an open campaign starts none. A
    campaign that cannot start (no suite, no case in the catalog) is left out, never an error of
    the node's report."""
    counts = Counter(
        Gpu.objects.filter(node=node, state=GpuState.HEALTHY, gpu_type__isnull=False).values_list("gpu_type", flat=True)
    )
    if not counts:
        return []
    types = GpuType.objects.filter(pk__in=counts).exclude(campaigns__state__in=OPEN_STATES)
    started = []
    for gpu_type in types:
        trigger = _trigger(gpu_type, node.driver_version)
        if trigger is None:
            continue
        try:
            with transaction.atomic():
                started.append(campaign_start(gpu_type=gpu_type, trigger=trigger, driver_version=node.driver_version,
                                              gpu_count=counts[gpu_type.pk]))
        except (ValidationError, CampaignOpen):
            continue
    return started


def _trigger(gpu_type: GpuType, driver_version: str) -> str | None:
    campaigns = ProfilingCampaign.objects.filter(gpu_type=gpu_type)
    if not Measurement.objects.filter(gpu_type=gpu_type).exists():
        try:
            version = suite.suite_version()
        except ImportError:
            return None
        return None if campaigns.filter(suite_version=version).exists() else CampaignTrigger.NEW_TYPE
    profiled = gpu_type.profiled_driver_version
    if driver_version and profiled and driver_version != profiled and not campaigns.filter(
        driver_version=driver_version
    ).exists():
        return CampaignTrigger.DRIVER_CHANGE
    return None


# --- Results


@transaction.atomic
def campaign_report(*, job: Job, gpu_type: GpuType | None, num_gpus: int, lines: list[str], now=None) -> None:
    """A report on a campaign job (its allocations: `num_gpus` GPUs of `gpu_type`) with the
    GOGH_MEASUREMENT lines it carries: the campaign runs, and each line settles its case: a
    measurement (source profiling, on the placement's type), or a failure with its kind and
    message. A bad line is its case's failure with the reason (a failure of no case when it
    names none of the job's cases); a case already settled (a resumed job runs its cases again)
    keeps its first result."""
    now = now or timezone.now()
    campaign = ProfilingCampaign.objects.select_for_update().select_related("gpu_type").get(pk=job.campaign_id)
    if campaign.state not in OPEN_STATES or (not lines and campaign.state == CampaignState.RUNNING):
        return  # nothing changes: no row written, no event for a report that only says it runs
    if campaign.state == CampaignState.PENDING:
        campaign.state, campaign.started_at = CampaignState.RUNNING, now
    for text in lines:
        _settle(campaign, job, gpu_type, num_gpus, text, now)
    _finish_if_complete(campaign, now)
    campaign.save()
    live.gpu_type_profile_changed(campaign.gpu_type.name)


def _settle(campaign: ProfilingCampaign, job: Job, gpu_type, num_gpus: int, text: str, now) -> None:
    try:
        result = read_line(text)
        if result.case in _settled(campaign):
            return
        if result.case not in job.profiling_cases:  # another job's case keeps its chance
            raise BadLine(f"case {result.case!r} is not one of this job's")
        if result.is_measurement:
            with transaction.atomic():  # a refused row leaves nothing behind
                _record(campaign, result, gpu_type, num_gpus, now)
    except BadLine as exc:
        if exc.case and exc.case in _settled(campaign):
            return
        campaign.failures.append({"case": exc.case, "kind": "error",
                                  "message": f"Bad GOGH_MEASUREMENT line: {exc.reason}"[:300]})
        return
    if result.kind == "measured":
        campaign.cases_done.append(result.case)
    else:
        campaign.failures.append({"case": result.case, "kind": result.kind, "message": result.message})


def _record(campaign: ProfilingCampaign, result: Result, gpu_type, num_gpus: int, now) -> None:
    if gpu_type is None:
        raise BadLine("the job's GPUs are not of one type", result.case)
    if result.num_gpus > num_gpus:
        raise BadLine(f"num_gpus {result.num_gpus}: the job holds {num_gpus} GPU(s)", result.case)
    names = [name for name in (result.workload, result.partner) if name]
    workloads = {w.name: w for w in Workload.objects.filter(name__in=names)}
    for name in names:
        if name not in workloads:
            raise BadLine(f"unknown workload {name!r}", result.case)
    problems = limit_problems(now=now, throughput=result.throughput, partner_throughput=result.partner_throughput,
                              power_w=result.power_w, num_gpus=result.num_gpus, memory_gb=result.memory_gb,
                              gpu_memory_gb=gpu_type.memory_gb)
    if problems:
        raise BadLine("; ".join(f"{key}: {why}" for key, why in sorted(problems.items())), result.case)
    measurement_record(
        workload=workloads[result.workload], gpu_type=gpu_type, num_gpus=result.num_gpus,
        consolidated=result.consolidated, partner=workloads.get(result.partner) if result.partner else None,
        throughput=result.throughput, partner_throughput=result.partner_throughput, power_w=result.power_w,
        utilization=result.utilization, memory_gb=result.memory_gb, source=MeasurementSource.PROFILING,
        reference=reference(result.suite_version or campaign.suite_version, result.case), observed_at=now,
    )


def reference(version: str, case: str) -> str:
    """A suite measurement's provenance, as the suite's CSV writes it."""
    return f"gogh-suite/{version}/{case}"[:200]


def _settled(campaign: ProfilingCampaign) -> set[str]:
    return set(campaign.cases_done) | {failure["case"] for failure in campaign.failures}


@transaction.atomic
def campaign_job_ended(*, job: Job, now=None) -> None:
    """A campaign job ended (succeeded, failed or cancelled): each of its cases without a result
    is a failure (kind error, with why the job ended), and the campaign may be complete."""
    now = now or timezone.now()
    campaign = ProfilingCampaign.objects.select_for_update().select_related("gpu_type").get(pk=job.campaign_id)
    if campaign.state not in OPEN_STATES:
        return
    settled = _settled(campaign)
    why = f"The job ended ({job.state}: {job.state_reason or 'no reason given'}) without a result for this case."
    for case in job.profiling_cases:
        if case not in settled:
            campaign.failures.append({"case": case, "kind": "error", "message": why[:300]})
    _finish_if_complete(campaign, now)
    campaign.save()
    live.gpu_type_profile_changed(campaign.gpu_type.name)


def _finish_if_complete(campaign: ProfilingCampaign, now) -> None:
    """Every case measured or failed: done (and the type profiled) when at least one was
    measured, else failed. P1's retraining then sees the new rows when it is due."""
    if not set(campaign.cases) <= _settled(campaign):
        return
    campaign.state = CampaignState.DONE if campaign.cases_done else CampaignState.FAILED
    campaign.finished_at = now
    campaign.started_at = campaign.started_at or now
    campaign.message = (f"{len(campaign.cases_done)} of {len(campaign.cases)} cases measured, "
                        f"{len(campaign.failures)} failed")
    if campaign.state == CampaignState.DONE:
        GpuType.objects.filter(pk=campaign.gpu_type_id).update(
            profiled_at=now, profiled_suite_version=campaign.suite_version,
            profiled_driver_version=campaign.driver_version, updated_at=now,
        )
        outbox_enqueue(task="catalog.tasks.predictor_retrain_if_due")
    announce("profiling campaign %s for %s %s: %s", campaign.pk, campaign.gpu_type.name, campaign.state,
             campaign.message)
