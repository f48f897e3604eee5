import gc
import logging
import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_process_init, worker_ready
from celery.worker.consumer import Consumer as CeleryConsumer

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


class Consumer(CeleryConsumer):
    """The worker's consumer (settings.CELERY_WORKER_CONSUMER), which survives closing a
    connection the broker already dropped.

    After a connection loss Celery closes the old connection before reconnecting. With a
    message delivered and not yet acknowledged (tasks ack late: one running, or one whose
    ack the outage refused), kombu's Redis channel tries to put it back on its queue while
    closing, on a connection it has already let go of, and raises AttributeError
    ('NoneType' object has no attribute 'hostname'), which Celery does not expect there:
    the worker stopped for good ("Unrecoverable error"). The connection is being thrown
    away either way, so a failure to close it is logged and the consumer reconnects. The
    message stays in Redis's unacknowledged set, which hands it out again after the
    visibility timeout; every task is idempotent, and the sweeps repair sooner.

    The same AttributeError comes from acknowledging, after the reconnection, a message of
    the lost connection (a task that ended, or hit its time limit, during the outage): it
    is counted among the connection errors, so the ack is logged as failed and the message
    handed out again, as an ack the outage refused is, instead of stopping the worker.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.connection_errors = (*self.connection_errors, AttributeError)

    def on_connection_error_after_connected(self, exc: Exception) -> None:
        try:
            super().on_connection_error_after_connected(exc)
        except Exception:  # closing a dead connection: whatever it raises, reconnect
            logging.getLogger(__name__).warning(
                "closing the lost broker connection failed; reconnecting anyway",
                exc_info=True)
            self.connection = None
