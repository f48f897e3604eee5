"""The notification models move here from the searchtweak app: the state only (the tables
keep their names, searchtweak_*), and the content types follow them so permissions and
admin log entries keep pointing at the same rows. searchtweak's
0007_notifications_moved_out drops them from its own state after this one."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MODELS = ("notification", "notificationpreference", "webhook", "webhookdelivery")


def content_types_move(apps, schema_editor, *, source="searchtweak", target="notifications"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    taken = set(ContentType.objects.using(schema_editor.connection.alias).filter(
        app_label=target, model__in=MODELS).values_list("model", flat=True))
    ContentType.objects.using(schema_editor.connection.alias).filter(
        app_label=source, model__in=[model for model in MODELS if model not in taken],
    ).update(app_label=target)


def content_types_back(apps, schema_editor):
    content_types_move(apps, schema_editor, source="notifications", target="searchtweak")


EVENT_CHOICES = [('evaluation_finished', 'Evaluation finished'), ('run_regressed', 'Run regressed'), ('run_improved', 'Run improved'), ('run_undecided', 'Run undecided'), ('judge_run_failed', 'Judge run failed'), ('judge_run_paused', 'Judge run paused at its budget'), ('schedule_paused', 'Schedule paused after repeated failures'), ('gold_accuracy_low', "A grader's accuracy on gold items fell low"), ('recompute_failed', "An evaluation's metrics could not be computed")]


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('searchtweak', '0006_recompute_failed_event_and_delivery_leases'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Webhook',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('url', models.CharField(max_length=500)),
                        ('events', models.JSONField(default=list)),
                        ('secret_encrypted', models.TextField()),
                        ('active', models.BooleanField(default=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhooks', to='searchtweak.team')),
                    ],
                    options={
                        'db_table': 'searchtweak_webhook',
                        'ordering': ['created_at', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='Notification',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('event', models.CharField(choices=EVENT_CHOICES, max_length=40)),
                        ('text', models.CharField(max_length=500)),
                        ('url', models.CharField(blank=True, max_length=500)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('read_at', models.DateTimeField(blank=True, null=True)),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='searchtweak.team')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='notifications', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'searchtweak_notification',
                        'ordering': ['-created_at', '-id'],
                        'indexes': [models.Index(fields=['user', 'read_at'], name='notification_user_unread')],
                    },
                ),
                migrations.CreateModel(
                    name='NotificationPreference',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('event', models.CharField(choices=EVENT_CHOICES, max_length=40)),
                        ('channel', models.CharField(choices=[('in_app', 'In the app'), ('mail', 'E-mail')], max_length=10)),
                        ('enabled', models.BooleanField()),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='notification_preferences', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'searchtweak_notificationpreference',
                        'constraints': [models.UniqueConstraint(fields=('user', 'event', 'channel'), name='notification_preference_unique')],
                    },
                ),
                migrations.CreateModel(
                    name='WebhookDelivery',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('event', models.CharField(max_length=40)),
                        ('body', models.TextField()),
                        ('attempt_count', models.PositiveIntegerField(default=0)),
                        ('claimed_at', models.DateTimeField(blank=True, null=True)),
                        ('next_attempt_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('status', models.CharField(choices=[('pending', 'Pending'), ('sent', 'Sent'), ('failed', 'Failed')], default='pending', max_length=10)),
                        ('status_code', models.PositiveIntegerField(blank=True, null=True)),
                        ('latency_ms', models.PositiveIntegerField(blank=True, null=True)),
                        ('error', models.CharField(blank=True, max_length=500)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('sent_at', models.DateTimeField(blank=True, null=True)),
                        ('webhook', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='notifications.webhook')),
                    ],
                    options={
                        'db_table': 'searchtweak_webhookdelivery',
                        'ordering': ['-created_at', '-id'],
                        'constraints': [models.CheckConstraint(condition=models.Q(('status__in', ['pending', 'sent', 'failed'])), name='webhook_delivery_status_valid')],
                        'indexes': [models.Index(condition=models.Q(('status', 'pending')), fields=['next_attempt_at'], name='webhook_delivery_pending_idx')],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_move, content_types_back, elidable=False),
    ]
