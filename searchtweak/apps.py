from django.apps import AppConfig


class SearchtweakConfig(AppConfig):
    name = "searchtweak"
    verbose_name = "SearchTweak"
