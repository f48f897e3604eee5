from django.apps import AppConfig


class BehaviourConfig(AppConfig):
    name = "behaviour"

    def ready(self) -> None:
        from behaviour.learning import gradable_pair_count
        from behaviour.tasks import click_run_dispatch
        from judges.local_graders import register_local_grader

        # judges sits below behaviour: it learns here how a clicks judge's runs grade,
        # and how many pairs a run would grade (its estimate).
        register_local_grader("clicks", click_run_dispatch, gradable_pair_count)
