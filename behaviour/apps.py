from django.apps import AppConfig


class BehaviourConfig(AppConfig):
    name = "behaviour"

    def ready(self) -> None:
        from behaviour.tasks import click_run_dispatch
        from judges.local_graders import register_local_grader

        # judges sits below behaviour: it learns here how a clicks judge's runs grade.
        register_local_grader("clicks", click_run_dispatch)
