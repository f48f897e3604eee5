from django.apps import AppConfig


class SearchtweakConfig(AppConfig):
    name = "searchtweak"
    verbose_name = "SearchTweak"

    def ready(self) -> None:
        from searchtweak import checks  # noqa: F401 - registers the deploy checks
