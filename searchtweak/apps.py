from django.apps import AppConfig


class SearchtweakConfig(AppConfig):
    name = "searchtweak"
    verbose_name = "SearchTweak"

    def ready(self) -> None:
        # Makes this project's Celery app the current one, so shared tasks enqueue through
        # its broker settings in every Django process (web, management commands, tests).
        from searchtweak import (
            celery,  # noqa: F401
            checks,  # noqa: F401 - registers the deploy checks
        )
