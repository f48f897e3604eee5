from django.apps import AppConfig


class SearchtweakConfig(AppConfig):
    name = "searchtweak"
    verbose_name = "SearchTweak"

    def ready(self) -> None:
        # Makes this project's Celery app the current one, so shared tasks enqueue through
        # its broker settings in every Django process (web, management commands, tests).
        from searchtweak import (  # noqa: F401
            celery,
            checks,  # registers the deploy checks
            tasks,
        )
