"""The production web server's settings, shared by the Dockerfile, docker-compose.yml and
bench/grading.py so the benchmark measures the server that ships.

Sync workers, two per CPU: grading requests are short (a few milliseconds of CPU and
two or three PostgreSQL round trips), and sync workers served more grades per second than
gthread workers, whose thread hand-offs cost CPU on every request (bench/RESULTS.md).
Sync workers hold one connection each and have no keep-alive, so a slow client ties up
a worker: put a buffering proxy (nginx, a cloud load balancer) in front in production.
"""

import os
import socket
import tempfile

from searchtweak.envvars import env_behind_tls_proxy


def usable_cpus() -> int:
    """The CPUs this process may run on: a container limited with cpusets sees fewer than
    os.cpu_count() says. A CPU quota (docker --cpus) does not show here: set
    WEB_CONCURRENCY there."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


# The address gunicorn listens on.
bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")
# gunicorn sync workers; set it under a CPU quota (docker --cpus), which usable_cpus cannot see.
workers = int(os.environ.get("WEB_CONCURRENCY") or 2 * usable_cpus())
worker_class = "sync"
# Nothing a view does waits on the search engine (fetching runs in Celery), so a request
# still running after this long is stuck, and the worker is better recycled.
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
# gunicorn's access log file: - for stdout, empty for none.
accesslog = os.environ.get("WEB_ACCESS_LOG", "-") or None
# gunicorn sets the request's scheme from X-Forwarded-Proto when the peer is in this list
# (127.0.0.1 by default), and Django's is_secure() believes it even when
# SECURE_PROXY_SSL_HEADER says no proxy sets that header: a client that reaches the port
# from the host (or through a proxy passing headers along) could pass for HTTPS. The same
# setting decides both: behind a TLS proxy, the header is the proxy's (from any address, as
# for Django); otherwise nobody's.
forwarded_allow_ips = "*" if env_behind_tls_proxy() else ""

# /metrics (monitoring) must sum what every worker counted, not answer with the one worker
# that served the scrape: each worker writes its counts to files in PROMETHEUS_MULTIPROC_DIR
# (searchtweak.instruments). With metrics on and no directory given, a fresh one for this
# server, made before any worker starts so that all of them inherit it. A directory given
# is left as it is: compose shares it with the Celery workers, which count there too.
if (os.environ.get("METRICS_TOKEN") or os.environ.get("METRICS_ALLOW")) and not (
        os.environ.get("PROMETHEUS_MULTIPROC_DIR")):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="searchtweak-metrics-")


def post_worker_init(worker) -> None:
    """Import the URL configuration, and with it every view, before the worker accepts:
    otherwise the first request each worker serves waits about half a second for it.
    Then leave what start-up made out of garbage collection, as the Celery workers do
    (searchtweak.celery): a full collection walked those ~145,000 objects, about 70 ms
    inside whichever request set it off (a dashboard of 100,000 keywords allocates
    enough to set off several)."""
    import gc

    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the import is the point
    gc.freeze()


def child_exit(server, worker) -> None:
    """A worker ended: drop its live gauges from /metrics' sums (its counters stay, they
    count what happened). The files are named as searchtweak.instruments names them."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(f"{socket.gethostname()}_{worker.pid}", directory)
