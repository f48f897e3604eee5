from django.apps import AppConfig


class EvaluationsConfig(AppConfig):
    name = "evaluations"

    def ready(self) -> None:
        from evaluations import tasks
        from evaluations.fetching import dispatch

        # The fetch services send keywords to the tasks, which call the services back: the
        # tasks are handed over here rather than imported there (no import cycle).
        dispatch.keywords_fetch_dispatcher_register(tasks.fetch_keywords_dispatch)
