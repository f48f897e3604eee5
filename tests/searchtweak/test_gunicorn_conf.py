"""gunicorn.conf.py, the production web server's settings (Dockerfile, docker-compose.yml,
bench/grading.py)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail

REPO = Path(__file__).resolve().parents[2]

# A fresh interpreter: the test process has imported every view already.
PROBE = """
import gc, os, runpy, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "searchtweak.settings")
import django
django.setup()
config = runpy.run_path("gunicorn.conf.py")
before = "judgments.api" in sys.modules, gc.get_freeze_count()
config["post_worker_init"](None)
print(config["workers"], config["worker_class"], config["bind"], *before,
      "judgments.api" in sys.modules, gc.get_freeze_count() > 100_000)
"""


def test_workers_come_from_the_environment_and_load_every_view_before_the_first_request():
    environment = {"WEB_CONCURRENCY": "3", "WEB_BIND": "127.0.0.1:9001", "PATH": "/usr/bin"}
    output = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=environment,
                            capture_output=True, text=True, check=True, timeout=60).stdout
    # Every view loaded, and what start-up made frozen out of garbage collection.
    assert output.split() == ["3", "sync", "127.0.0.1:9001", "False", "0", "True", "True"]


def test_without_web_concurrency_two_workers_per_cpu_the_process_may_use():
    """As in a container limited to one CPU by a cpuset, on a host with more."""
    if shutil.which("taskset") is None:
        skip_or_fail("taskset (util-linux) is not installed")
    output = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", PROBE], cwd=REPO,
                            env={"PATH": "/usr/bin"}, capture_output=True, text=True,
                            check=True, timeout=60).stdout
    assert output.split()[0] == "2"


def _serve(extra_env: dict[str, str]):
    """gunicorn with gunicorn.conf.py on a free 127.0.0.1 port, in production settings."""
    import secrets
    import socket
    import tempfile
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {
        "PATH": "/usr/bin:/bin", "DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1", "WEB_CONCURRENCY": "1", "WEB_ACCESS_LOG": "",
        "WEB_BIND": f"127.0.0.1:{port}",
        "DATABASE_URL": f"sqlite:///{tempfile.gettempdir()}/gunicorn-conf-{port}.sqlite3",
        **extra_env}
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "searchtweak.wsgi:application",
         "--config", "gunicorn.conf.py"], cwd=REPO, env=environment,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise AssertionError(server.stderr.read().decode())


def _status_of_a_forged_https_request(extra_env: dict[str, str]) -> int:
    import httpx

    server, url = _serve(extra_env)
    try:
        # Plain HTTP claiming to have come through TLS: the HTTPS redirect tells which
        # scheme the application believed.
        return httpx.get(f"{url}/login/", headers={"X-Forwarded-Proto": "https"},
                         follow_redirects=False, timeout=30).status_code
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow_reason("starts gunicorn with the production configuration")
def test_gunicorn_trusts_x_forwarded_proto_only_when_django_does():
    # gunicorn's default trusted 127.0.0.1: the forged header passed for HTTPS (200).
    assert _status_of_a_forged_https_request({}) == 301
    # Behind a TLS proxy the header is the proxy's, for both.
    assert _status_of_a_forged_https_request({"SECURE_PROXY_SSL_HEADER": "true"}) == 200
