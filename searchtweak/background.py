"""Tasks on threads of the web process: the embedded mode.

Without a broker Celery runs a task eagerly, inside the request that sent it. With
EMBEDDED_TASKS_IN_BACKGROUND the long tasks (fetching keywords, judge lanes) run on a
thread of this process instead, so the page that started them answers at once and shows
the progress. `BackgroundThreads.send` is the one place that chooses; `background_run` is
the one way such a thread runs a task's body. Without beat, the periodic bodies apps
register (`periodic_register`: the schedules' tick) run on a thread of the web server
(`periodic_start`).
"""

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from celery import Task
from django.conf import settings
from django.db import connection

from searchtweak.celery import app

logger = logging.getLogger(__name__)
Result = TypeVar("Result")


def embedded_in_background() -> bool:
    """Whether tasks sent now run on a thread of this process: Celery runs them eagerly
    (no broker) and EMBEDDED_TASKS_IN_BACKGROUND is on."""
    return bool(settings.EMBEDDED_TASKS_IN_BACKGROUND and app.conf.task_always_eager)


def background_run(body: Callable[[], Result], *, what: str,
                   on_crash: Callable[[Exception], Any] | None = None) -> Result | None:
    """Run a task's `body` as a background thread does: a crash is logged ("<what> in the
    background failed") and handed to `on_crash`, instead of dying unseen with the thread's
    future; None then. The thread's database connection is closed after, as Celery's
    task signals do for a worker (searchtweak.celery)."""
    try:
        return body()
    except Exception as error:
        logger.exception("%s in the background failed", what)
        if on_crash is not None:
            try:
                on_crash(error)
            except Exception:
                logger.exception("recording the crash of %s failed too", what)
        return None
    finally:
        connection.close()


class BackgroundThreads:
    """A few threads of the web process for one kind of task, used in the embedded mode."""

    def __init__(self, name: str, *, workers: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    def send(self, task: Task, *args: Any, background: Callable[[], Any]) -> None:
        """`task.delay(*args)` to the workers; in the embedded mode (embedded_in_background)
        run `background` on one of these threads instead (it wraps its body in
        background_run)."""
        if embedded_in_background():
            self._executor.submit(background)
        else:
            task.delay(*args)


# --- periodic work without beat -------------------------------------------------------------

_periodic: dict[str, tuple[float, Callable[[], Any]]] = {}
_periodic_started = False
_periodic_lock = threading.Lock()


def periodic_register(name: str, *, every_seconds: float, body: Callable[[], Any]) -> None:
    """A body celery beat runs in production (its task calls the same body), to run every
    `every_seconds` on a thread of the web server when there is no beat."""
    _periodic[name] = (every_seconds, body)


def periodic_start() -> bool:
    """Start one daemon thread per registered body, once per process, when
    PERIODIC_IN_WEB_PROCESS is on; whether it started them now. searchtweak.wsgi calls it,
    so a web server without a broker (make run) fires schedules itself. Several such
    processes are safe: what the bodies do is claimed row by row."""
    global _periodic_started
    if not settings.PERIODIC_IN_WEB_PROCESS:
        return False
    with _periodic_lock:
        if _periodic_started:
            return False
        _periodic_started = True
    for name, (every_seconds, body) in _periodic.items():
        threading.Thread(target=_periodic_loop, args=(name, every_seconds, body),
                         name=f"periodic-{name}", daemon=True).start()
    return True


def _periodic_loop(name: str, every_seconds: float, body: Callable[[], Any]) -> None:
    while True:
        result = background_run(body, what=f"periodic {name}")
        if result:
            logger.info("periodic %s: %s", name, result)
        time.sleep(every_seconds)
