from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("judgments", "0011_slot_opened_because"),
    ]

    operations = [
        migrations.AddField(
            model_name="goldprobe",
            name="skipped_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
