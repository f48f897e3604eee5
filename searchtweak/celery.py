import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "searchtweak.settings")

app = Celery("searchtweak")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _close_old_database_connections(task, **kwargs) -> None:
    """What Django does around a request: close a connection that broke or outlived
    CONN_MAX_AGE, keep a good one (settings.CELERY_DB_REUSE_MAX)."""
    from django.db import close_old_connections

    if not getattr(task.request, "is_eager", False):
        close_old_connections()
