"""What the scheduler sends to Celery, and how often: a round request is held until its round
starts (at most one pending), P1 is asked once per job (never by rounds), and a submission is
answered 201 whether or not the broker can be reached, its tasks kept in the outbox."""
import time

import pytest

from catalog.models import PredictionRecord, PredictorVersion, Workload
from gogh_web.outbox.models import OutboxMessage
from gogh_web.outbox.services import outbox_drain
from scheduler import services, tasks
from scheduler.models import Job
from tests.unit.gogh_web.broker import broker as broker  # a fixture, `as` marks it re-exported

ROUND, P1 = "scheduler.tasks.scheduling_round", "scheduler.tasks.job_predict"


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """`with committed(): ...`: that transaction counts as committed, so its outbox is sent."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def submitted(owner, workload, committed):
    with committed():
        return services.job_submit(owner=owner, workload=workload, min_throughput=1, max_gpus=1).job


def later(monkeypatch, seconds: float) -> None:
    """The wall clock moves on by `seconds` (for anything that keeps time with time.time)."""
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + seconds)


def test_a_burst_leads_to_one_round_and_nothing_more_until_it_starts(db, alice, resnet50, broker, committed,
                                                                    monkeypatch, settings):
    for _ in range(3):
        submitted(alice, resnet50, committed)
    assert broker.of(ROUND) == [([], {"trigger": "submit"}, settings.GOGH_ROUND_DEBOUNCE_S)]
    later(monkeypatch, 10 * settings.GOGH_ROUND_DEBOUNCE_S)  # the round waits in a busy queue
    with committed():
        services.job_cancel(job=Job.objects.first(), by=alice)
    submitted(alice, resnet50, committed)
    assert len(broker.of(ROUND)) == 1  # still one pending: it has not started


def test_a_request_while_a_round_runs_leads_to_exactly_one_more(db, alice, resnet50, broker, committed,
                                                                monkeypatch):
    submitted(alice, resnet50, committed)
    assert len(broker.of(ROUND)) == 1

    def round_during_which_jobs_arrive(trigger):
        for _ in range(2):
            submitted(alice, resnet50, committed)
        return services.RoundResult(solve_run=services.SolveRun.objects.create(solver="ilp", trigger=trigger),
                                    allocation=None)

    monkeypatch.setattr(services, "scheduling_round_run", round_during_which_jobs_arrive)
    tasks.scheduling_round(trigger="submit")
    assert [kwargs for _, kwargs, _ in broker.of(ROUND)] == [{"trigger": "submit"}] * 2
    submitted(alice, resnet50, committed)  # after it, before the next one starts
    assert len(broker.of(ROUND)) == 2


def test_a_round_requested_while_the_broker_is_away_is_sent_when_it_is_back(db, alice, resnet50, broker,
                                                                            committed):
    broker.away = True
    submitted(alice, resnet50, committed)
    submitted(alice, resnet50, committed)
    assert broker.sent == [] and OutboxMessage.objects.filter(key=services.ROUND_KEY).count() == 1
    broker.away = False
    outbox_drain()
    assert len(broker.of(ROUND)) == 1 and len(broker.of(P1)) == 2


def test_a_submission_while_the_broker_is_away_is_answered_201_and_kept(cluster, alice, submit, broker,
                                                                       committed):
    """It used to be answered 500 (the failed send's log line raised), though the job existed."""
    broker.away = True
    with committed():
        response = submit(alice)
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    waiting = {(m.task, tuple(m.args)) for m in OutboxMessage.objects.filter(sent_at__isnull=True)}
    assert waiting == {(ROUND, ()), (P1, (job.pk,))}


@pytest.fixture
def predictor(db):
    """An active P1 (its weights are never loaded here: no job_predict runs)."""
    return PredictorVersion.objects.create(name="p1", architecture="feedforward", weights_file="x.pt",
                                           weights_sha256="0" * 64, status="active")


def test_rounds_with_no_ready_node_never_ask_p1_again(predictor, alice, broker, committed):
    """Each round used to send P1 again for every pending job it knew nothing about (13,317
    tasks for 2,000 jobs): P1 is asked once, at submission."""
    mystery = Workload.objects.create(name="Mystery", family="X")  # nothing measured, no node at all
    jobs = [submitted(alice, mystery, committed) for _ in range(3)]
    for _ in range(4):
        with committed():
            services.scheduling_round_run(trigger="periodic")
    assert sorted(args[0] for args, _, _ in broker.of(P1)) == [job.pk for job in jobs]


def test_reconciliation_asks_p1_once_for_jobs_that_lack_it(db, alice, resnet50, broker, committed):
    waiting, predicted, ended = (submitted(alice, resnet50, committed) for _ in range(3))
    for job in (waiting, predicted, ended):
        assert services.job_predict(job=job) is None  # no predictor yet: acknowledged, nothing stored
    assert services.predictions_reconcile() == 0  # still none
    version = PredictorVersion.objects.create(name="p1", architecture="feedforward", weights_file="x.pt",
                                              weights_sha256="0" * 64, status="active")
    PredictionRecord.objects.create(workload=resnet50, job_id=predicted.pk, version=version, estimates={})
    with committed():
        services.job_cancel(job=ended, by=alice)
    before = len(broker.of(P1))
    for _ in range(3):
        with committed():
            services.predictions_reconcile()
    assert [args for args, _, _ in broker.of(P1)[before:]] == [[waiting.pk]]


def test_a_repeated_p1_request_keeps_the_prediction_and_is_acknowledged(predictor, alice, resnet50, broker,
                                                                       committed):
    job = submitted(alice, resnet50, committed)
    record = PredictionRecord.objects.create(workload=resnet50, job_id=job.pk, version=predictor, estimates={})
    assert OutboxMessage.objects.filter(key=services.p1_key(job.pk)).exists()
    assert services.job_predict(job=job) == record  # the stored one: P1 computed once per job
    assert PredictionRecord.objects.filter(job_id=job.pk).count() == 1
    assert not OutboxMessage.objects.filter(key=services.p1_key(job.pk)).exists()


def test_a_p1_request_for_a_job_deleted_since_is_acknowledged_not_sent_for_ever(alice, resnet50, broker,
                                                                              committed):
    job = submitted(alice, resnet50, committed)
    key = services.p1_key(job.pk)
    assert OutboxMessage.objects.filter(key=key).exists()
    Job.objects.filter(pk=job.pk).delete()
    assert tasks.job_predict(job.pk) is None
    assert not OutboxMessage.objects.filter(key=key).exists()
