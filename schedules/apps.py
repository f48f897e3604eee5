from django.apps import AppConfig
from django.conf import settings


class SchedulesConfig(AppConfig):
    name = "schedules"

    def ready(self) -> None:
        from evaluations import events
        from metrics.verdict_rules import register_own_rule
        from schedules import receivers, tasks, verdicts
        from searchtweak.background import periodic_register

        # A run's fetch, judges and verdict: one listener, its steps in order.
        events.evaluation_transitioned.connect(
            receivers.on_evaluation_transitioned,
            dispatch_uid="schedules.receivers.on_evaluation_transitioned")
        # The gate, and the verdict on finish, judge a run by its schedule's rule.
        register_own_rule(verdicts.run_own_rule)
        # Under `make run` (no broker, no beat) the web process ticks the schedules itself.
        periodic_register("schedules", every_seconds=settings.SCHEDULE_TICK_SECONDS,
                          body=tasks.schedules_tick_body)
