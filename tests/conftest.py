"""Fixtures shared by the whole suite."""

import importlib
import os
import shutil
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from searchtweak.models import Team, User


CHROMIUM = "/usr/bin/chromium"
# CI sets this so a missing Redis or Chromium fails the run instead of skipping tests.
REQUIRE_SERVICES = os.environ.get("SEARCHTWEAK_REQUIRE_SERVICES", "") == "1"


def skip_or_fail(reason: str) -> None:
    """Skip the test (or, called at import time, its module); under CI, fail instead."""
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (SEARCHTWEAK_REQUIRE_SERVICES=1 forbids skipping)")
    pytest.skip(reason, allow_module_level=True)


def import_or_skip(name: str, *, reason: str) -> ModuleType:
    """pytest.importorskip that CI cannot bypass: a missing dev dependency fails the run."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        skip_or_fail(f"{name} cannot be imported ({error}); {reason}")
        raise  # unreachable: skip_or_fail always raises


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing():
    """MD5 for every password the suite makes. Django's PBKDF2 costs about half a second a
    hash here, and `personas` makes six users per test: with it, hashing took nine tenths of
    the suite's time. What the tests check of passwords does not depend on the hasher."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _eager_celery():
    """Run tasks in-process, as the embedded default does.

    CI exports CELERY_BROKER_URL so settings point at Redis; tests must still see their
    tasks run. A test that wants a real worker opts out with tests.workers.tasks_sent_to.
    """
    from celery._state import _set_task_join_will_block
    from django.conf import settings

    from searchtweak.celery import app as celery_app

    # Eager tasks run by several threads at once (the concurrency tests) can leave
    # Celery's global "inside a task" flag set, which then forbids result.get() here.
    _set_task_join_will_block(False)
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    # Synchronous, as tests expect; tests/evaluations/test_tasks.py turns it on.
    previous_background = settings.EMBEDDED_TASKS_IN_BACKGROUND
    settings.EMBEDDED_TASKS_IN_BACKGROUND = False
    # No schedule tick on a thread: tests call services.schedules_tick with their clock.
    previous_periodic = settings.PERIODIC_IN_WEB_PROCESS
    settings.PERIODIC_IN_WEB_PROCESS = False
    yield
    settings.PERIODIC_IN_WEB_PROCESS = previous_periodic
    settings.EMBEDDED_TASKS_IN_BACKGROUND = previous_background
    celery_app.conf.task_always_eager = previous


@pytest.fixture(scope="session")
def browser_type_launch_args():
    if not shutil.which(CHROMIUM):
        skip_or_fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    # Playwright's sync API keeps an event loop running in the test thread; Django's ORM
    # refuses to run beside a running loop unless told it is safe. It is: no test awaits.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    return {
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run",
        ],
    }


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 800}}


@dataclass
class Personas:
    """One team seen by each role, plus an outsider who owns another team."""

    team: "Team"
    owner: "User"
    admin: "User"
    lead: "User"
    grader: "User"
    outsider: "User"
    other_team: "Team"


@pytest.fixture
def personas(db) -> Personas:
    # Imported here: the metric-core tests run this conftest without Django set up.
    from searchtweak.models import Role
    from tests.searchtweak.factories import TeamFactory, member

    team = TeamFactory(name="Acme")
    other_team = TeamFactory(name="Other")
    return Personas(
        team=team,
        owner=member(team, Role.OWNER, "owner"),
        admin=member(team, Role.ADMIN, "admin"),
        lead=member(team, Role.LEAD, "lead"),
        grader=member(team, Role.GRADER, "grader"),
        outsider=member(other_team, Role.OWNER, "outsider"),
        other_team=other_team,
    )


# What a skip needs, by a phrase of its reason; the rest are summed up by their own reason.
SKIP_KINDS = (
    ("DATABASE_URL", "PostgreSQL-only (set DATABASE_URL=postgres://...)"),
    (CHROMIUM, f"browser (no Chromium at {CHROMIUM})"),
    ("Redis", "real worker (Redis unreachable: set CELERY_BROKER_URL)"),
)


def skip_summary(reasons: list[str]) -> str | None:
    """One line saying how many tests were skipped and why, or None when none were."""
    if not reasons:
        return None
    counts: dict[str, int] = {}
    for reason in reasons:
        kind = next((label for phrase, label in SKIP_KINDS if phrase in reason), reason)
        counts[kind] = counts.get(kind, 0) + 1
    parts = ", ".join(f"{count} {kind}" for kind, count in
                      sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return f"{len(reasons)} skipped, so this was not a full run: {parts}"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """`make test` on a laptop skips the PostgreSQL-only, browser and real-worker tests
    quietly; say so just above pytest's own closing line (which CI parses, and stays
    last): after the short summary, which the outermost wrapper follows."""
    yield
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reasons.append(reason.removeprefix("Skipped: "))
    summary = skip_summary(reasons)
    if summary:
        terminalreporter.write_line(summary, yellow=True, bold=True)
