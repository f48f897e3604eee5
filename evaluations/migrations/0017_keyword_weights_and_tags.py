"""Keywords carry a weight (how often people ask them, 1 unless given) and tags, in an
evaluation and in each query set version; a query set may tag its keywords head, torso and
tail by traffic (its cut points in percent). Every row is kept: the new columns have
database defaults (weight 1, no tags, segments off at 50 and 80), so adding them writes
no row, and a row inserted without them gets the same."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('evaluations', '0016_query_set_model_named_keyword_set'),
    ]

    operations = [
        migrations.AddField(
            model_name='keyword',
            name='tags',
            field=models.JSONField(blank=True, db_default=[], default=list),
        ),
        migrations.AddField(
            model_name='keyword',
            name='weight',
            field=models.PositiveIntegerField(db_default=1, default=1),
        ),
        migrations.AddField(
            model_name='keywordset',
            name='traffic_head_cut',
            field=models.PositiveSmallIntegerField(db_default=50, default=50),
        ),
        migrations.AddField(
            model_name='keywordset',
            name='traffic_segments',
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name='keywordset',
            name='traffic_torso_cut',
            field=models.PositiveSmallIntegerField(db_default=80, default=80),
        ),
        migrations.AddField(
            model_name='querysetkeyword',
            name='tags',
            field=models.JSONField(blank=True, db_default=[], default=list),
        ),
        migrations.AddField(
            model_name='querysetkeyword',
            name='weight',
            field=models.PositiveIntegerField(db_default=1, default=1),
        ),
        migrations.AddConstraint(
            model_name='keywordset',
            constraint=models.CheckConstraint(condition=models.Q(('traffic_head_cut__lt', models.F('traffic_torso_cut')), ('traffic_torso_cut__lte', 100)), name='query_set_traffic_cuts_ordered'),
        ),
    ]
