"""The silence detector remembers, between its runs, whether the control plane heard anybody,
so that an outage of the web or the database does not mark every node down (telemetry.lifecycle)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('telemetry', '0003_node_drain_and_approval'),
    ]

    operations = [
        migrations.CreateModel(
            name='SilenceWatch',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('checked_at', models.DateTimeField(blank=True, help_text='When the detector last ran.', null=True)),
                ('deaf', models.BooleanField(default=False, help_text='At that run the control plane presumed itself away: it declared nobody silent.')),
                ('hearing_since', models.DateTimeField(blank=True, help_text='When it heard again after being away; nodes are declared silent one full timeout after it.', null=True)),
            ],
        ),
    ]
