"""`make run`: what a newcomer types first. Its links follow the address it serves, and
once the server is up the last lines on the screen are the demo's logins."""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from django.urls import resolve

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
LOGINS = ["Demo team ready. Log in with:", "  admin / demo  (Owner)", "  lead / demo  (Lead)",
          "  grader1 / demo  (Grader)", "  grader2 / demo  (Grader)",
          "  grader3 / demo  (Grader)", "  viewer / demo  (Viewer)"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _make_env(**extra: str) -> dict[str, str]:
    # The recipe's own settings, not those of this test run.
    env = {key: value for key, value in os.environ.items() if key not in (
        "DATABASE_URL", "CELERY_BROKER_URL", "EMAIL_URL", "SITE_URL", "MAKEFLAGS", "PORT")}
    env.update(extra)
    return env


@pytest.fixture
def database_dir(tmp_path) -> Iterator[Path]:
    """Where the recipe's SQLite file goes: a memory file system where the machine has one.
    On disk each of the ~900 commits of migrating and seeding the demo waits for its fsync,
    9 ms here: 8 s of the test, which no newcomer's laptop with an SSD pays like that."""
    memory = Path("/dev/shm")
    if not memory.is_dir():
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=memory, prefix="make-run-") as name:
        yield Path(name)


def _make_run(*args: str) -> list[str]:
    # The stamp of an installed .venv is taken as done (-o): the test's interpreter is.
    return ["make", "--no-print-directory", "-o", ".venv/.installed-run", "run", *args]


def test_links_follow_the_port_make_run_serves_and_site_url_when_set(tmp_path):
    # A stand-in interpreter prints each command with the SITE_URL it was given.
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\necho "RAN $* SITE_URL=$SITE_URL"\n')
    fake.chmod(0o755)
    port = _free_port()
    for extra, expected in (({}, f"http://127.0.0.1:{port}"),
                            ({"SITE_URL": "https://search.example.test"},
                             "https://search.example.test")):
        env = _make_env(**extra)
        done = subprocess.run(_make_run(f"PORT={port}", f"PY={fake}"), cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        ran = [line for line in done.stdout.splitlines() if line.startswith("RAN ")]
        assert [line.split()[2] for line in ran] == [
            "migrate", "seed_demo", "seed_demo_history", "serve_demo"], ran
        assert all(line.endswith(f"SITE_URL={expected}") for line in ran), ran


@pytest.mark.timeout(300)
@pytest.mark.slow_reason("runs `make run`: migrates, seeds the demo and serves it")
def test_make_run_ends_with_the_logins_and_names_the_real_compare_page(tmp_path, database_dir):
    port = _free_port()
    env = _make_env(DATABASE_URL=f"sqlite:///{database_dir / 'demo.sqlite3'}")
    log = tmp_path / "make-run.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            _make_run(f"PORT={port}", f"PY={PYTHON}"), cwd=REPO, env=env,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        # Up: the server's start-up lines, then the logins after them.
        while time.monotonic() < deadline and not re.search(
                rf"Quit the server with.*{re.escape(LOGINS[-1])}", log.read_text(), re.S):
            assert process.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
        text = log.read_text()
        served = text.split("Quit the server with", 1)
        assert len(served) == 2, text[-3000:]
        lines = [line for line in text.splitlines() if line.strip()]
        assert lines[-len(LOGINS):] == LOGINS, lines[-12:]
        assert not [line for line in lines if line.startswith("Task ")]
        assert "Content-Type:" not in text and "No hostname was supplied" not in text
        hint = re.search(r"compare them under Compare in the top menu: (\S+)", text)
        assert hint, text[-3000:]
        url = urlsplit(hint.group(1))
        assert f"{url.scheme}://{url.netloc}" == f"http://127.0.0.1:{port}"
        assert resolve(url.path).view_name == "metrics:compare"
        # The page is there (a visitor is sent to log in first).
        answer = httpx.get(hint.group(1), follow_redirects=False, timeout=10)
        assert answer.status_code == 302 and "/login/" in answer.headers["location"]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
