from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"

    def ready(self) -> None:
        from django.conf import settings

        from notifications import tasks
        from searchtweak.background import periodic_register

        # Under `make run` (no broker, no beat) the web process sweeps stalled webhook
        # deliveries itself, as it ticks the schedules.
        periodic_register("webhook deliveries", every_seconds=settings.WEBHOOK_SWEEP_EVERY_SECONDS,
                          body=tasks.webhook_deliveries_sweep_body)
