from django.apps import AppConfig


class JudgmentsConfig(AppConfig):
    name = "judgments"
