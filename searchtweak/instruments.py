"""The operators' counters and histograms (served at /metrics by the monitoring app).

They are defined here, at the bottom of the house, because every app counts something
(a grade in judgments, a fetch in evaluations, a webhook in notifications) and every app
may import searchtweak; monitoring, at the top, only reads them. Names follow
Prometheus's conventions: `searchtweak_` prefix, `_total` for counters, `_seconds` for
durations. Every label takes a bounded set of values (a view's name, an outcome word, a
status class), never a path, an id or a message.

With PROMETHEUS_MULTIPROC_DIR set (several gunicorn workers, Celery workers on a shared
volume) every process writes its values to files there and /metrics sums them
(prometheus-client's multiprocess mode). The files are named by host and process id, not
the process id alone: containers sharing the volume each number their processes from 1.
"""

import os
import socket

from prometheus_client import Counter, Histogram, values


def process_identifier() -> str:
    """This process's name in the multiprocess files: distinct across containers."""
    return f"{socket.gethostname()}_{os.getpid()}"


# PROMETHEUS_MULTIPROC_DIR: a directory every web and worker process writes its counts to,
# summed by /metrics (several gunicorn workers); gunicorn.conf.py makes one when unset.
MULTIPROCESS_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
if MULTIPROCESS_DIR:
    # Before any metric below is made: each takes its value class when created.
    values.ValueClass = values.MultiProcessValue(process_identifier=process_identifier)

# A page or an API call answers in milliseconds; a slow one is a problem at 1 s. Few
# buckets: the request histogram has a series per bucket and view (some 250 views), and a
# scrape in multiprocess mode reads every process's copy of each (bench/metrics_endpoint.py).
REQUEST_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
# Outbound calls are slower than requests: a search engine or a model answers in 10 ms to
# a minute.
OUTBOUND_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

REQUESTS = Counter(
    "searchtweak_http_requests", "HTTP requests answered, by view name and status class.",
    ["view", "status"])
REQUEST_SECONDS = Histogram(
    "searchtweak_http_request_duration_seconds",
    "Time from the request reaching Django to its answer, by view name.", ["view"],
    buckets=REQUEST_BUCKETS)
GRADES = Counter(
    "searchtweak_grades_written",
    "Grades written on feedback slots (committed), by who wrote them: person, judge, reuse.",
    ["source"])
FETCHES = Counter(
    "searchtweak_fetches",
    "Keywords fetched from a search endpoint (retries included), by outcome: ok, error.",
    ["outcome"])
FETCH_SECONDS = Histogram(
    "searchtweak_fetch_duration_seconds",
    "Time to fetch one keyword's results, retries included.", buckets=OUTBOUND_BUCKETS)
JUDGE_CALLS = Counter(
    "searchtweak_judge_calls",
    "HTTP attempts to an LLM judge's provider, by outcome: ok, error.", ["outcome"])
JUDGE_CALL_SECONDS = Histogram(
    "searchtweak_judge_call_duration_seconds",
    "Time of one HTTP attempt to an LLM judge's provider.", buckets=OUTBOUND_BUCKETS)
WEBHOOK_DELIVERIES = Counter(
    "searchtweak_webhook_delivery_attempts",
    "Webhook delivery attempts, by outcome: delivered, retry, failed.", ["outcome"])
SCHEDULE_TICKS = Counter(
    "searchtweak_schedule_ticks", "Runs of the schedules' tick.")
SCHEDULE_RUNS_OVERDUE = Counter(
    "searchtweak_schedule_runs_overdue",
    "Schedule runs finished at their deadline with what was graded by then.")


def status_class(status_code: int) -> str:
    """"2xx" for 200..299 and so on: five values, whatever a view answers."""
    return f"{status_code // 100}xx"
