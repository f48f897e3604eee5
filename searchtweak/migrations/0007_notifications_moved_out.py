"""The notification models now belong to the notifications app (its 0001_initial takes
them over, tables and all): they leave this app's state only; the tables stay."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('searchtweak', '0006_recompute_failed_event_and_delivery_leases'),
        ('notifications', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='WebhookDelivery'),
                migrations.DeleteModel(name='Webhook'),
                migrations.DeleteModel(name='NotificationPreference'),
                migrations.DeleteModel(name='Notification'),
            ],
            database_operations=[],
        ),
    ]
