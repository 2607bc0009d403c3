"""A stored sweep's problem names its utilization table `utilizations`, the key
scheduler.optimizer.serialization now writes and reads; sweeps stored before carry
`utilisations` and get the new key, so their points still solve."""
from django.db import migrations

OLD, NEW = "utilisations", "utilizations"


def _rename_key(apps, old: str, new: str) -> None:
    sweeps = apps.get_model("dashboard", "TradeoffSweep")
    for sweep in sweeps.objects.filter(problem__predictions__has_key=old).only("pk", "problem"):
        predictions = sweep.problem["predictions"]
        predictions[new] = predictions.pop(old)
        sweep.save(update_fields=["problem"])


def forwards(apps, schema_editor):
    _rename_key(apps, OLD, NEW)


def backwards(apps, schema_editor):
    _rename_key(apps, NEW, OLD)


class Migration(migrations.Migration):

    dependencies = [
        ("dashboard", "0002_tradeoffpoint_fairness_weight"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
