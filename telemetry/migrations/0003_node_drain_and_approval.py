"""Nodes remember an operator's drain across down and back, and wait for an operator's approval
before they receive jobs. Nodes registered before approval existed were already trusted: they
count as approved; nodes draining now count as drained."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


def existing_nodes_approved_and_drains_kept(apps, schema_editor):
    Node = apps.get_model("telemetry", "Node")
    Node.objects.filter(approved_at__isnull=True).update(approved_at=timezone.now())
    Node.objects.filter(state="draining").update(drained=True)


class Migration(migrations.Migration):

    dependencies = [
        ('telemetry', '0002_gpu_samples'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='node',
            name='approved_at',
            field=models.DateTimeField(blank=True, help_text='When an operator admitted this node; until then it receives no jobs.', null=True),
        ),
        migrations.AddField(
            model_name='node',
            name='approved_by',
            field=models.ForeignKey(blank=True, help_text='The operator who admitted this node.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='node',
            name='drained',
            field=models.BooleanField(default=False, help_text='An operator drained this node: it takes no new jobs, and stays drained across down and back.'),
        ),
        migrations.RunPython(existing_nodes_approved_and_drains_kept, migrations.RunPython.noop),
    ]
