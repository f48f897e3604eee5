from django.apps import AppConfig


class SearchtweakConfig(AppConfig):
    name = "searchtweak"
    verbose_name = "SearchTweak"

    def ready(self) -> None:
        # Makes this project's Celery app the current one, so shared tasks enqueue through
        # its broker settings in every Django process (web, management commands, tests).
        from django.conf import settings

        from searchtweak import (
            celery,  # noqa: F401
            checks,  # noqa: F401 - registers the deploy checks
            tasks,
        )
        from searchtweak.background import periodic_register

        # Under `make run` (no broker, no beat) the web process sweeps stalled webhook
        # deliveries itself, as it ticks the schedules.
        periodic_register("webhook deliveries", every_seconds=settings.WEBHOOK_SWEEP_EVERY_SECONDS,
                          body=tasks.webhook_deliveries_sweep_body)
