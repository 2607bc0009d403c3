"""Power limits become a decision by default (docs/power_limits.md): a cluster whose admin never
chose (no SolverConfigChange of `power_limits`) turns them on; one where an admin set the
setting keeps what was set. The allocation keeps the speed its round planned it at under its
limit, which simulated nodes follow."""
from django.db import migrations, models


def turn_on_where_never_chosen(apps, schema_editor):
    SolverConfig = apps.get_model("scheduler", "SolverConfig")
    SolverConfigChange = apps.get_model("scheduler", "SolverConfigChange")
    chosen = set(SolverConfigChange.objects.filter(field="power_limits").values_list("config_id", flat=True))
    SolverConfig.objects.exclude(pk__in=chosen).update(power_limits=True)


class Migration(migrations.Migration):

    dependencies = [
        ('scheduler', '0018_services'),
    ]

    operations = [
        migrations.AddField(
            model_name='allocation',
            name='power_limit_speed',
            field=models.FloatField(blank=True, help_text='The fraction of its default-limit throughput the round planned the job at under power_limit_w (empty: at the default).', null=True),
        ),
        migrations.AlterField(
            model_name='solverconfig',
            name='power_limits',
            field=models.BooleanField(default=True, help_text="Choose each GPU's power limit with its placement (docs/power_limits.md); off: default limits."),
        ),
        migrations.RunPython(turn_on_where_never_chosen, migrations.RunPython.noop),
    ]
