# The Celery app is imported by SearchtweakConfig.ready (every Django process) and found by
# `celery -A searchtweak` as searchtweak.celery, not imported here: importing any module of
# this package would otherwise start Celery's Django fix-up, which imports Django, and the
# Django-free parts (judges.core, through searchtweak.outbound_sending) must stay so.


def __getattr__(name: str):
    if name == "celery_app":
        from searchtweak.celery import app

        return app
    raise AttributeError(f"module 'searchtweak' has no attribute {name!r}")
