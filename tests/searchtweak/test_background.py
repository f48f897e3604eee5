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
