"""Allocation: the one `partner` becomes a list of `partners` (up to theta jobs share a GPU).

Each row's partner is copied into its partners. Backwards, a row keeps the partner with the
smallest id: a pair, the only group the old schema could hold, comes back as it was; a group
of three or more cannot be written in one column and keeps one of its partners."""
from django.db import migrations, models


def forwards(apps, schema_editor):
    Allocation = apps.get_model("scheduler", "Allocation")
    Through = Allocation.partners.through
    rows = Allocation.objects.filter(partner__isnull=False).values_list("pk", "partner_id").iterator(chunk_size=2000)
    batch = []
    for allocation_id, partner_id in rows:
        batch.append(Through(allocation_id=allocation_id, job_id=partner_id))
        if len(batch) >= 2000:
            Through.objects.bulk_create(batch)
            batch = []
    Through.objects.bulk_create(batch)


def backwards(apps, schema_editor):
    Allocation = apps.get_model("scheduler", "Allocation")
    first: dict[int, int] = {}
    for allocation_id, job_id in Allocation.partners.through.objects.order_by("job_id").values_list("allocation_id", "job_id"):
        first.setdefault(allocation_id, job_id)
    for allocation_id, job_id in first.items():
        Allocation.objects.filter(pk=allocation_id).update(partner_id=job_id)


class Migration(migrations.Migration):

    dependencies = [
        ("scheduler", "0006_solver_fairness_weight"),
    ]

    operations = [
        migrations.AddField(
            model_name="allocation",
            name="partners",
            field=models.ManyToManyField(
                blank=True, help_text="The jobs sharing this GPU, if any.", related_name="+", to="scheduler.job"
            ),
        ),
        migrations.RunPython(forwards, backwards),
        migrations.RemoveField(model_name="allocation", name="partner"),
    ]
