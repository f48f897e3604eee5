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


from tests import loop_report

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


def pytest_addoption(parser):
    parser.addoption("--slowest", type=int, default=0, metavar="N",
                     help="after the run, list the N slowest tests (setup, call and "
                          "teardown together) and the total")


_phase_reports: list = []


def pytest_runtest_logreport(report):
    # Under xdist the controller sees every worker's reports here too.
    _phase_reports.append(report)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # A reason of "" would pass the slow-test check while saying nothing.
    for item in items:
        for marker in item.iter_markers("slow_reason"):
            if not (marker.args and isinstance(marker.args[0], str) and marker.args[0].strip()):
                raise pytest.UsageError(f"{item.nodeid}: slow_reason needs the reason")
    # The slow tests first, the rest in their order; then pytest-django's sort (stable)
    # puts the database tests first, the transactional ones next, the rest last, so each of
    # those starts with its slow tests. xdist deals tests out in this order: the processes
    # end on short tests together, instead of one waiting out the other's `make run`
    # (tests/test_make_run.py, among the last before).
    items.sort(key=lambda item: item.get_closest_marker("slow_reason") is None)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker, request):
    """With --reuse-db, a run stopped inside a transactional test (which empties the tables
    only at its end) leaves its rows to the next run: empty them once, when there are any.
    No migration seeds rows, so an empty database is what migrating makes."""
    if request.config.getoption("create_db") or not request.config.getoption("reuse_db"):
        return
    from tests import emptied_tables

    with django_db_blocker.unblock():
        emptied_tables.empty()


# Long enough for a slow page's last request; a connection left open by the browser is
# closed with its context, so waiting longer would only hide a hang.
LIVE_REQUESTS_DRAIN_SECONDS = 30


@pytest.fixture(autouse=True)
def _live_requests_drained(request):
    """A test on the live server ends with no request left in it: set up after the test
    database (whose flush runs after this teardown) and before `page` (whose context
    closes before it)."""
    if "live_server" not in request.fixturenames:
        yield
        return
    from tests.live_requests import count_connections

    server = request.getfixturevalue("live_server").thread.httpd
    in_flight = count_connections(server)
    yield
    if "browser" in request.fixturenames:
        # `page`'s context is closed already; one a test opened itself would poll on.
        for context in request.getfixturevalue("browser").contexts:
            context.close()
    if not in_flight.wait_for_none(LIVE_REQUESTS_DRAIN_SECONDS):
        pytest.fail(f"the live server still served a request {LIVE_REQUESTS_DRAIN_SECONDS} s "
                    "after the test ended")


@pytest.fixture(autouse=True, scope="session")
def _live_server_without_nagle():
    """The live server writes a response's headers and its body in two writes: with Nagle's
    algorithm on, the body waits for the client's delayed ACK of the headers, 40 ms on Linux,
    on every request of a kept-alive connection after its first few. The browser walks paid
    it on most of their requests (about a third of a persona's walk); real servers set
    TCP_NODELAY, as tests/evaluations/servers.py does."""
    from django.test.testcases import QuietWSGIRequestHandler

    QuietWSGIRequestHandler.disable_nagle_algorithm = True


@pytest.fixture(autouse=True, scope="session")
def _sqlite_commits_without_fsync():
    """SQLite syncs the file to disk at every commit (synchronous=FULL): 9 ms here, which
    the transactional tests paid on each of their thousands of commits (a third of their
    time). A test database need not survive the machine losing power; what every test
    checks (transactions, locks, what other connections and processes see) does not
    depend on it. Set on the raw connection, so no query count sees it. The workers a test
    starts open the file with the project's own settings."""
    from django.db import connections
    from django.db.backends.signals import connection_created

    def without_fsync(sender, connection, **kwargs) -> None:
        if connection.vendor == "sqlite":
            connection.connection.execute("PRAGMA synchronous = OFF")

    connection_created.connect(without_fsync, weak=False)
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None:
            without_fsync(None, connection)


@pytest.fixture(autouse=True, scope="session")
def _static_files_scanned_once():
    from tests import static_files_once

    static_files_once.install()


@pytest.fixture(autouse=True, scope="session")
def _transactional_tests_emptied_by_delete():
    from tests import emptied_tables

    emptied_tables.install()


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
    times = loop_report.times_per_test(_phase_reports)
    slowest_count = config.getoption("slowest")
    if slowest_count:
        for line in loop_report.summary_lines(times, slowest_count):
            terminalreporter.write_line(line)
    else:
        unmarked = loop_report.slow_without_reason(times)
        if unmarked:
            terminalreporter.write_line(
                f"Over {loop_report.SLOW_SECONDS:g} s without a slow_reason: {len(unmarked)} "
                "(--slowest=15 lists them)", yellow=True)
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reasons.append(reason.removeprefix("Skipped: "))
    summary = skip_summary(reasons)
    if summary:
        terminalreporter.write_line(summary, yellow=True, bold=True)
