"""The QuerySet model is named KeywordSet, so it no longer shadows Django's QuerySet.

The database does not change: the table name is pinned first (to the name it has always
had, so no SQL runs), and the rename then finds its table name unchanged; the foreign keys
keep their columns. The verbose name stays "query set". Django's contenttypes app renames
the model's content type after the RenameModel."""

from django.db import migrations


class Migration(migrations.Migration):

    # After the schedules app took up Schedule, whose query_set the rename then points at
    # KeywordSet in the state.
    dependencies = [
        ('evaluations', '0015_schedules_moved_to_schedules_app'),
        ('schedules', '0001_initial'),
    ]

    operations = [
        migrations.AlterModelTable(name='queryset', table='evaluations_queryset'),
        migrations.RenameModel(old_name='QuerySet', new_name='KeywordSet'),
        migrations.AlterModelOptions(
            name='keywordset',
            options={'ordering': ['name', 'id'], 'verbose_name': 'query set'},
        ),
    ]
