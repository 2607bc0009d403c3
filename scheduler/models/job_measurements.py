"""The catalog measurements a running job yielded (its agent's observed throughput).

The link is the scheduler's: the catalog, below it, knows measurements, not jobs. Deleting a
job forgets the link and keeps the measurement, which stays what the catalog learnt.
"""
from django.db import models


class JobMeasurement(models.Model):
    job = models.ForeignKey("scheduler.Job", on_delete=models.CASCADE, related_name="measurement_links")
    measurement = models.OneToOneField("catalog.Measurement", on_delete=models.CASCADE, related_name="job_link")

    def __str__(self):
        return f"job {self.job_id}: measurement {self.measurement_id}"
