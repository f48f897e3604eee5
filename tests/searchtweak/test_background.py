"""The embedded mode's one helper: which path a task takes, and how a background thread
runs its body."""

import logging
import threading

import pytest
from celery import shared_task

from searchtweak import background

pytestmark = pytest.mark.django_db


seen: list[tuple[str, str]] = []


@shared_task(name="tests.background_probe")
def probe(tag: str) -> None:
    seen.append((tag, threading.current_thread().name))


def test_a_task_goes_to_a_background_thread_only_in_the_embedded_mode(settings):
    threads = background.BackgroundThreads("probe", workers=1)
    seen.clear()
    done = threading.Event()

    def in_background() -> None:
        seen.append(("thread", threading.current_thread().name))
        done.set()

    threads.send(probe, "worker", background=in_background)  # tests: eager, setting off
    assert seen == [("worker", threading.current_thread().name)]
    settings.EMBEDDED_TASKS_IN_BACKGROUND = True
    assert background.embedded_in_background()
    threads.send(probe, "worker", background=in_background)
    assert done.wait(10)
    assert seen[1][0] == "thread" and seen[1][1].startswith("probe")


def test_a_crash_in_the_background_is_logged_handed_over_and_the_answer_is_none(caplog):
    crashes = []

    def body() -> int:
        raise RuntimeError("disk on fire")

    with caplog.at_level(logging.ERROR, logger="searchtweak.background"):
        assert background.background_run(body, what="probing", on_crash=crashes.append) is None
    assert "probing in the background failed" in caplog.text and "disk on fire" in caplog.text
    assert [str(error) for error in crashes] == ["disk on fire"]
    assert background.background_run(lambda: 7, what="probing") == 7


def test_the_web_process_runs_periodic_bodies_once_started_and_only_when_told(
        settings, monkeypatch):
    """Without beat (make run) a thread of the web server runs the schedules' tick: the
    schedules app registers it, searchtweak.wsgi starts it, once per process."""
    from notifications import tasks as notification_tasks
    from schedules import tasks

    assert background._periodic["schedules"] == (settings.SCHEDULE_TICK_SECONDS,
                                                 tasks.schedules_tick_body)
    # And the sweep of stalled webhook deliveries, which beat sends otherwise.
    assert background._periodic["webhook deliveries"] == (
        settings.WEBHOOK_SWEEP_EVERY_SECONDS, notification_tasks.webhook_deliveries_sweep_body)
    runs: list[str] = []
    ran_twice = threading.Event()

    def body() -> str:
        runs.append(threading.current_thread().name)
        if len(runs) >= 2:
            ran_twice.set()
            threading.Event().wait()  # park the daemon thread for the rest of the session
        return ""

    monkeypatch.setattr(background, "_periodic", {"probe": (0.01, body)})
    monkeypatch.setattr(background, "_periodic_started", False)
    settings.PERIODIC_IN_WEB_PROCESS = False
    assert background.periodic_start() is False
    settings.PERIODIC_IN_WEB_PROCESS = True
    assert background.periodic_start() is True
    assert background.periodic_start() is False  # one set of threads per process
    assert ran_twice.wait(10)
    assert runs[0] == "periodic-probe"
