from django.apps import AppConfig


class BehaviourConfig(AppConfig):
    name = "behaviour"
