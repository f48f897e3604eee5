from django.apps import AppConfig


class JudgesConfig(AppConfig):
    name = "judges"

    def ready(self) -> None:
        from evaluations import events, hooks
        from judges import schedules

        hooks.register_counting_judges(schedules.counting_judges)
        events.evaluation_transitioned.connect(
            schedules.on_evaluation_transitioned,
            dispatch_uid="judges.schedules.on_evaluation_transitioned")
