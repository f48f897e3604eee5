"""Summing several processes' counter files (monitoring.multiprocess): the same samples as
prometheus-client's own collector, including series a process adds after a scrape."""

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from monitoring.multiprocess import FileSummer
from tests.monitoring.scrape import sample

REPO = Path(__file__).resolve().parents[2]

# A worker process: counts what stdin's lines say (view status seconds), one line at a
# time, answering "ok" after each so the test can scrape between two of them.
WORKER = """
import sys
from searchtweak import instruments as i
for line in sys.stdin:
    view, status, seconds = line.split()
    i.REQUESTS.labels(view, status).inc()
    i.REQUEST_SECONDS.labels(view).observe(float(seconds))
    print("ok", flush=True)
"""


class Worker:
    def __init__(self, directory: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER], cwd=REPO, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO),
                 "PROMETHEUS_MULTIPROC_DIR": str(directory)})

    def count(self, view: str, status: str, seconds: float) -> None:
        self.process.stdin.write(f"{view} {status} {seconds}\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline() == "ok\n"

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def library_text(directory: Path) -> str:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    return generate_latest(registry).decode()


def samples(text: str) -> list[tuple]:
    return sorted((found.name, tuple(sorted(found.labels.items())), found.value)
                  for family in text_string_to_metric_families(text)
                  for found in family.samples)


def families(text: str) -> list[tuple]:
    return sorted((family.name, family.type, family.documentation)
                  for family in text_string_to_metric_families(text))


def test_two_processes_counts_are_summed_with_cumulated_buckets(tmp_path):
    first, second = Worker(tmp_path), Worker(tmp_path)
    try:
        first.count("home", "2xx", 0.02)
        first.count("home", "2xx", 0.02)
        second.count("home", "2xx", 0.3)
        second.count("home", "4xx", 3)
    finally:
        first.stop()
        second.stop()
    text = FileSummer().text(str(tmp_path)).decode()

    assert sample(text, "searchtweak_http_requests_total", view="home", status="2xx") == 3
    assert sample(text, "searchtweak_http_requests_total", view="home", status="4xx") == 1
    bucket = "searchtweak_http_request_duration_seconds_bucket"
    # 0.02, 0.02, 0.3 and 3 seconds: two at or under 0.025, three under 0.5, all under +Inf.
    assert sample(text, bucket, view="home", le="0.01") == 0
    assert sample(text, bucket, view="home", le="0.025") == 2
    assert sample(text, bucket, view="home", le="0.25") == 2
    assert sample(text, bucket, view="home", le="0.5") == 3
    assert sample(text, bucket, view="home", le="2.5") == 3
    assert sample(text, bucket, view="home", le="+Inf") == 4
    assert sample(text, "searchtweak_http_request_duration_seconds_count", view="home") == 4
    assert sample(text, "searchtweak_http_request_duration_seconds_sum",
                  view="home") == 0.02 + 0.02 + 0.3 + 3
    assert samples(text) == samples(library_text(tmp_path))
    assert families(text) == families(library_text(tmp_path))


def test_series_a_process_adds_after_a_scrape_are_read_on_the_next(tmp_path):
    summer = FileSummer()
    worker = Worker(tmp_path)
    try:
        worker.count("home", "2xx", 0.02)
        before = summer.text(str(tmp_path)).decode()
        worker.count("home", "2xx", 0.02)  # a known series' value changes in place
        worker.count("grade", "5xx", 1.5)  # new series appended to the same files
        after = summer.text(str(tmp_path)).decode()
        late = Worker(tmp_path)  # a process started after the first scrape
        late.count("grade", "5xx", 0.04)
        late.stop()
        latest = summer.text(str(tmp_path)).decode()
    finally:
        worker.stop()

    assert sample(before, "searchtweak_http_requests_total", view="home", status="2xx") == 1
    assert sample(before, "searchtweak_http_requests_total", view="grade", status="5xx") == 0
    assert sample(after, "searchtweak_http_requests_total", view="home", status="2xx") == 2
    assert sample(after, "searchtweak_http_requests_total", view="grade", status="5xx") == 1
    assert sample(latest, "searchtweak_http_requests_total", view="grade", status="5xx") == 2
    assert sample(latest, "searchtweak_http_request_duration_seconds_bucket",
                  view="grade", le="0.05") == 1
    assert samples(latest) == samples(library_text(tmp_path))


def test_a_file_removed_and_recreated_is_read_from_its_start(tmp_path):
    summer = FileSummer()
    worker = Worker(tmp_path)
    worker.count("home", "2xx", 0.02)
    worker.count("grade", "2xx", 0.02)
    worker.stop()
    assert sample(summer.text(str(tmp_path)).decode(), "searchtweak_http_requests_total",
                  view="grade", status="2xx") == 1
    for name in os.listdir(tmp_path):
        os.remove(tmp_path / name)
    again = Worker(tmp_path)
    again.count("export", "2xx", 0.02)
    again.stop()
    text = summer.text(str(tmp_path)).decode()

    assert sample(text, "searchtweak_http_requests_total", view="export", status="2xx") == 1
    assert sample(text, "searchtweak_http_requests_total", view="grade", status="2xx") == 0
    assert samples(text) == samples(library_text(tmp_path))
