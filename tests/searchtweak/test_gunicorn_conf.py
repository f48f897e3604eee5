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


def _serve(extra_env: dict[str, str], *, check_path: str | None = None):
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


@pytest.mark.slow_reason("starts gunicorn with two workers")
def test_metrics_sum_every_workers_counts(tmp_path):
    """Eight requests over two workers: whichever worker answers the scrape, /metrics
    reports all eight. One worker is held reading a request that has not finished
    arriving while the other serves seven, then the first finishes it: both served some
    (else the sum would prove nothing)."""
    import socket

    import httpx

    from tests.monitoring.scrape import sample

    token = "multi-worker-scrape"
    # Production settings redirect plain HTTP: the requests say a TLS proxy passed them.
    server, url = _serve({"WEB_CONCURRENCY": "2", "METRICS_TOKEN": token,
                          "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
                          "SECURE_PROXY_SSL_HEADER": "true"})
    host, port = url.removeprefix("http://").split(":")
    held = socket.create_connection((host, int(port)), timeout=30)
    try:
        held.sendall(b"GET /help/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n")
        with httpx.Client(timeout=30, headers={"X-Forwarded-Proto": "https"}) as http:
            for _ in range(7):
                assert http.get(f"{url}/help/").status_code == 200
            held.sendall(b"Connection: close\r\n\r\n")
            assert held.recv(12) == b"HTTP/1.1 200"
            scrapes = [http.get(f"{url}/metrics",
                                headers={"Authorization": f"Bearer {token}"}).text
                       for _ in range(4)]
    finally:
        held.close()
        server.terminate()
        server.wait(timeout=30)
    for text in scrapes:
        assert sample(text, "searchtweak_http_requests_total",
                      view="guide:index", status="2xx") == 8
    # Counted in files of two processes (host_pid), as the hold arranged.
    assert len({path.stem.split("_", 1)[1] for path in tmp_path.glob("counter_*.db")}) == 2
