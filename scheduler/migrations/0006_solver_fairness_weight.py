"""SolverConfig: the fairness switch becomes a weight (fairness on -> weight 1), and theta is
refused above 2 instead of capped (a stored theta above 2, which solvers treated as 2, becomes
2, so the settings row stays valid for the audited update service's full_clean)."""
import django.core.validators
from django.db import migrations, models

MESSAGE = (
    "At most 2 jobs can share a GPU. Co-location is modelled for pairs only, because co-located throughput is measured "
    "for pairs (Gavel: 26 x 26 ordered pairs) and for no group of three or more."
)


def forwards(apps, schema_editor):
    SolverConfig = apps.get_model("scheduler", "SolverConfig")
    SolverConfig.objects.filter(fairness=True).update(fairness_weight=1.0)
    SolverConfig.objects.filter(theta__gt=2).update(theta=2)


def backwards(apps, schema_editor):
    SolverConfig = apps.get_model("scheduler", "SolverConfig")
    SolverConfig.objects.filter(fairness_weight__gt=0).update(fairness=True)


class Migration(migrations.Migration):

    dependencies = [
        ("scheduler", "0005_job_memory"),
    ]

    operations = [
        migrations.AddField(
            model_name="solverconfig",
            name="fairness_weight",
            field=models.FloatField(
                default=0.0,
                help_text=(
                    "0: off. Above 0, one unit of the least-served tenant's share (mean throughput / T_min of its jobs) "
                    "is worth this many average GPUs at full power, and among equally many admitted jobs of a priority "
                    "those of tenants with fewer jobs go first."
                ),
                validators=[django.core.validators.MinValueValidator(0)],
            ),
        ),
        migrations.RunPython(forwards, backwards),
        migrations.RemoveField(model_name="solverconfig", name="fairness"),
        migrations.AlterField(
            model_name="solverconfig",
            name="theta",
            field=models.PositiveSmallIntegerField(
                default=2,
                help_text="Jobs per GPU at most (1: no sharing; 2 at most: co-location is modelled for pairs).",
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(2, message=MESSAGE),
                ],
            ),
        ),
    ]
