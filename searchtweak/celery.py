import gc
import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_process_init, worker_ready

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


@worker_ready.connect
@worker_process_init.connect
def _freeze_start_up_objects(**kwargs) -> None:
    """Leave the objects of start-up (Django, Celery, every module: most of the heap) out
    of garbage collection: each full collection walked them all, 100-170 ms with the GIL
    held, and a fetch's sixteen request threads sent nothing meanwhile. Once the worker is
    ready (its solo or thread pool runs tasks here) and in each forked pool process."""
    gc.freeze()
