from django.apps import AppConfig
from django.conf import settings


class EvaluationsConfig(AppConfig):
    name = "evaluations"

    def ready(self) -> None:
        from evaluations import events, notify_receivers, schedule_receivers, tasks
        from evaluations.fetching import dispatch

        # The fetch services send keywords to the tasks, which call the services back: the
        # tasks are handed over here rather than imported there (no import cycle).
        dispatch.keywords_fetch_dispatcher_register(tasks.fetch_keywords_dispatch)
        events.evaluation_transitioned.connect(
            notify_receivers.on_evaluation_transitioned,
            dispatch_uid="evaluations.notify_receivers.on_evaluation_transitioned")
        events.evaluation_transitioned.connect(
            schedule_receivers.on_evaluation_transitioned,
            dispatch_uid="evaluations.schedule_receivers.on_evaluation_transitioned")
        # Under `make run` (no broker, no beat) the web process ticks the schedules itself.
        from searchtweak.background import periodic_register

        periodic_register("schedules", every_seconds=settings.SCHEDULE_TICK_SECONDS,
                          body=tasks.schedules_tick_body)
