"""Celery's queues: rounds, predictions and maintenance apart, every task routed to a queue that
exists, each message delivered to one queue only, and run_stack's workers consuming them all."""
import pytest
from django.core.management import call_command

from gogh_web.celery import app
from gogh_web.celery_config import DEFAULT_QUEUE, MAINTENANCE, PREDICTIONS, ROUNDS, TASK_QUEUES
from gogh_web.management.commands import run_stack

QUEUE_OF = {
    "scheduler.tasks.scheduling_round": ROUNDS,
    "scheduler.tasks.solve_cell": ROUNDS,
    "scheduler.tasks.job_predict": PREDICTIONS,
    "catalog.tasks.prediction_refine": PREDICTIONS,
    "catalog.tasks.predictor_retrain": PREDICTIONS,
    "catalog.tasks.predictor_retrain_if_due": PREDICTIONS,
    "scheduler.tasks.predictions_reconcile": MAINTENANCE,
    "scheduler.tasks.accounting_pass": MAINTENANCE,
    "scheduler.tasks.gpu_speeds_refresh": MAINTENANCE,
    "scheduler.tasks.executor_sync": ROUNDS,
    "telemetry.tasks.gpu_samples_downsample": MAINTENANCE,
    "telemetry.tasks.nodes_mark_silent_down": MAINTENANCE,
    "telemetry.tasks.gpu_power_curves_refit": MAINTENANCE,
    "gogh_web.events.tasks.events_prune": MAINTENANCE,
    "gogh_web.outbox.tasks.outbox_drain": MAINTENANCE,
    "gogh_web.dashboard.tasks.tradeoff_point": DEFAULT_QUEUE,
}


def queue_of(task: str) -> str:
    return app.amqp.router.route({}, task, (), {})["queue"].name


def test_every_task_goes_to_its_queue():
    app.loader.import_default_modules()
    project_tasks = {name for name in app.tasks if not name.startswith("celery.")}
    assert project_tasks == set(QUEUE_OF)
    assert {task: queue_of(task) for task in project_tasks} == QUEUE_OF


def test_a_message_reaches_one_queue_only():
    """Queues sharing an exchange and routing key would each get a copy of every message."""
    queues = app.amqp.queues
    assert set(queues) == set(TASK_QUEUES)
    assert len({(q.exchange.name, q.routing_key) for q in queues.values()}) == len(TASK_QUEUES)


def test_run_stack_consumes_every_queue_with_rounds_on_a_worker_of_their_own(monkeypatch, db):
    started = []

    class Recorder:
        def __init__(self, services, **options):
            started.extend(services)

        def run(self):
            return 0

    monkeypatch.setattr(run_stack, "Supervisor", Recorder)
    call_command("run_stack", "--no-beat")
    consumed = {}
    for service in started:
        if "worker" in service.argv:
            consumed[service.name] = set(service.argv[service.argv.index("-Q") + 1].split(","))
    assert consumed == {"rounds": {ROUNDS}, "worker": {PREDICTIONS, MAINTENANCE, DEFAULT_QUEUE}}


@pytest.mark.parametrize("name", ["outbox-drain", "predictions-reconcile"])
def test_beat_runs_the_outbox_drain_and_the_p1_reconciliation(settings, name):
    entry = settings.CELERY_BEAT_SCHEDULE[name]
    assert entry["task"] in QUEUE_OF and queue_of(entry["task"]) == MAINTENANCE
