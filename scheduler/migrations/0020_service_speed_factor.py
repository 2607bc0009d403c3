"""A service learns its replicas' speed (their capacity) apart from the latency factor
(docs/services.md, "The latency model"): the factor and the learner's spread beside the calibration."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('scheduler', '0019_power_limits_on'),
    ]

    operations = [
        migrations.AlterField(
            model_name='service',
            name='calibration',
            field=models.FloatField(default=1.0, help_text='Latency factor on the modelled P99, learnt from reports.'),
        ),
        migrations.AddField(
            model_name='service',
            name='speed_factor',
            field=models.FloatField(default=1.0, help_text="Replicas' true speed over their predicted one, learnt from reports (capacity)."),
        ),
        migrations.AddField(
            model_name='service',
            name='calibration_spread',
            field=models.JSONField(blank=True, default=list, help_text="The learner's covariance of (ln(c/f), ln f); empty: not learnt yet."),
        ),
    ]
