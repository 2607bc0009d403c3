# Power limits as a decision become the default once measurements taken at a limit are recorded
# as at the default (scheduler/dispatch/at_default_limit.py). A cluster's settings row that was
# off only because off was the default is turned on; one an operator ever set stays as set.

from django.db import migrations, models


def turn_on_unless_set(apps, schema_editor):
    SolverConfig = apps.get_model("scheduler", "SolverConfig")
    SolverConfigChange = apps.get_model("scheduler", "SolverConfigChange")
    if not SolverConfigChange.objects.filter(field="power_limits").exists():
        SolverConfig.objects.update(power_limits=True)


class Migration(migrations.Migration):

    dependencies = [
        ('scheduler', '0018_services'),
    ]

    operations = [
        migrations.AlterField(
            model_name='solverconfig',
            name='power_limits',
            field=models.BooleanField(default=True, help_text="Choose each GPU's power limit with its placement (docs/power_limits.md); off: default limits."),
        ),
        migrations.RunPython(turn_on_unless_set, migrations.RunPython.noop),
    ]
