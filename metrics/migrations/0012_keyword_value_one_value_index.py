# The descending twin of kmv_metric_value_kw_idx cost every value write (600,000 of them in
# a recompute of 100,000 keywords); the table's descending sort reads the ascending one
# backwards.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('metrics', '0011_keyword_value_redundant_fk_indexes'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='keywordmetricvalue',
            name='kmv_metric_value_desc_idx',
        ),
    ]
