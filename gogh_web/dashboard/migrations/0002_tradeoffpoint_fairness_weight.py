"""Sweep points carry the fairness weight they were solved at (the sweep now varies the
weight, not fairness on/off). Cached sweeps were solved on the old grid: they are dropped and
the Trade-off page computes a new one."""
from django.db import migrations, models


def drop_cached_sweeps(apps, schema_editor):
    apps.get_model("dashboard", "TradeoffSweep").objects.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ("dashboard", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(drop_cached_sweeps, migrations.RunPython.noop),
        migrations.RemoveField(model_name="tradeoffpoint", name="fairness_on"),
        migrations.AddField(
            model_name="tradeoffpoint",
            name="fairness_weight",
            field=models.FloatField(default=0.0, help_text="The point's SolverSettings.fairness_weight (0: off)."),
            preserve_default=False,
        ),
    ]
