"""SolverConfig: theta up to 4 (groups of three or four jobs per GPU, their throughput
estimated from the measured pairs: catalog/colocation.py); above 4 is refused."""
import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('scheduler', '0007_allocation_partners'),
    ]

    operations = [
        migrations.AlterField(
            model_name='solverconfig',
            name='theta',
            field=models.PositiveSmallIntegerField(default=2, help_text='Jobs per GPU at most (1: no sharing; 2: pairs, as measured; up to 4: groups, estimated from pairs).', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(4, message='At most 4 jobs can share a GPU. Co-located throughput is measured for pairs only (Gavel: 26 x 26 ordered pairs); a group of three or more is estimated from its pairs (additive slowdown), an estimate that grows less trustworthy with every member.')]),
        ),
    ]
