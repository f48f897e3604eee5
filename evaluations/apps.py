from django.apps import AppConfig


class EvaluationsConfig(AppConfig):
    name = "evaluations"
