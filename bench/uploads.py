"""How soon a keyword file far over the limits is refused (part of `make bench`), and what
a 100,000-keyword upload costs through the evaluation page.

    .venv/bin/python bench/uploads.py
    BENCH_DATABASE_PREFIX=st_io .venv/bin/python bench/uploads.py --pages   # PostgreSQL

Two files, as a person might pick them by mistake:
- "54 MB": 2.45 million lines. The form refuses it from its size (KEYWORD_UPLOAD_MAX_BYTES,
  default MAX_KEYWORDS x 501 bytes, 47.8 MB) before reading it; the reference is what
  happened before the cap: every line parsed, then "At most 100,000 keywords".
- "3.6 MB, 260k lines": under the size cap, so it is read, and reading stops at the first line
  past 100,000 keywords; the reference parses every line (max_keywords set out of reach).
Each figure is the median of 3 runs (the 54 MB reference parses for tens of seconds, so
there is no warm-up), reference and capped alternating, with the ratio of the medians; no
thresholds are asserted.

With --pages, on its own PostgreSQL database (BENCH_DATABASE_PREFIX_uploads, dropped at the
end): a 100,000-line file (1.3 MB) posted to the evaluation create page, stored (seconds,
peak RSS of the process, keywords stored), and the same file with a control character on
line 99,999, refused with one error and nothing stored. Each post runs in a fresh process.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "searchtweak.settings")

import django

django.setup()

from django.core.exceptions import ValidationError  # noqa: E402

from evaluations.services.keyword_input import (  # noqa: E402
    keyword_upload_size_problem,
    keywords_from_upload,
)

RUNS = 3


def refused(action: Callable[[], object]) -> None:
    try:
        action()
    except ValidationError:
        return
    raise SystemExit("expected the file to be refused")


def parse_everything(content: bytes) -> None:
    lines = keywords_from_upload(filename="k.txt", content=content, max_keywords=sys.maxsize)
    if len(lines) <= 100_000:
        raise SystemExit("the reference file must be over the keyword limit")


def size_check(content: bytes) -> None:
    """The form's check: the upload's size against KEYWORD_UPLOAD_MAX_BYTES, nothing read."""
    if keyword_upload_size_problem(filename="k.txt", size=len(content)) is None:
        raise SystemExit("expected the file to be over the size limit")


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def compare(name: str, reference: Callable[[], object], capped: Callable[[], object]) -> None:
    reference_times, capped_times = [], []
    for _ in range(RUNS):
        reference_times.append(timed(reference))
        capped_times.append(timed(capped))
    before, after = statistics.median(reference_times), statistics.median(capped_times)
    print(f"{name:<22} parse all {before * 1000:9.1f} ms   refused after "
          f"{after * 1000:8.2f} ms   ratio {before / after:8.1f}x")


def main() -> None:
    huge = b"".join(b"keyword number %d\n" % number for number in range(2_450_000))
    many = b"".join(b"keyword %d\n" % number for number in range(260_000))
    newline = b"\n"
    print(f"files: {len(huge) / 1e6:.1f} MB ({huge.count(newline):,} lines), "
          f"{len(many) / 1e6:.1f} MB ({many.count(newline):,} lines); median of {RUNS}")
    compare(f"{len(huge) / 1e6:.0f} MB (size cap)", lambda: parse_everything(huge),
            lambda: size_check(huge))
    compare(f"{len(many) / 1e6:.1f} MB (keyword cap)", lambda: parse_everything(many),
            lambda: refused(lambda: keywords_from_upload(filename="k.txt", content=many)))


PAGE_LINES = 100_000
BAD_LINE = 99_999


def page_file(*, bad: bool) -> bytes:
    return b"".join((b"keyword %d\x07\n" if bad and n == BAD_LINE else b"keyword %d\n") % n
                    for n in range(1, PAGE_LINES + 1))


def page_child(kind: str) -> None:
    """One post of the 100,000-line file to the create page, measured: prints a JSON line."""
    import json
    import resource

    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    from evaluations.models import Endpoint, Evaluation, Keyword, SearchModel
    from searchtweak.models import Membership, Role, Team, User

    team, _ = Team.objects.get_or_create(name="Uploads bench")
    user = User.objects.filter(username="lead").first() or User.objects.create_user("lead")
    Membership.objects.get_or_create(team=team, user=user, defaults={"role": Role.OWNER})
    endpoint, _ = Endpoint.objects.get_or_create(
        team=team, name="bench", defaults={"url": "http://127.0.0.1:9/", "mapper": {}})
    model, _ = SearchModel.objects.get_or_create(team=team, endpoint=endpoint, name="bench")
    client = Client()
    client.force_login(user)
    content = page_file(bad=kind == "bad")
    before_rows = (Evaluation.objects.count(), Keyword.objects.count())
    before = _rss_mb()
    started = time.perf_counter()
    response = client.post("/evaluations/new/", {
        "name": "Spring", "description": "", "model": model.pk, "keywords": "",
        "scale": "graded", "strategy": "1", "metrics": "ndcg@10", "transformers": "",
        "tags": "", "guidelines": "", "reuse_grades": "none",
        "keywords_file": SimpleUploadedFile("many.txt", content)})
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # The page's error lines (response.context needs the test runner's instrumentation).
    errors = re.findall(r"line \d+: [^<]+", response.content.decode())
    after_rows = (Evaluation.objects.count(), Keyword.objects.count())
    print(json.dumps({"status": response.status_code, "seconds": seconds, "peak": peak,
                      "growth": peak - before, "errors": errors,
                      "keywords_added": after_rows[1] - before_rows[1],
                      "evaluations_added": after_rows[0] - before_rows[0],
                      "file_mb": len(content) / 1e6}))


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pages() -> None:
    import json
    import subprocess

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _support import bench_database, database_url, drop_database, recreate_database, report

    name = bench_database("uploads")
    env = {**os.environ, "DATABASE_URL": database_url(name)}
    recreate_database(name, env)
    figures: dict[str, list[dict]] = {"good": [], "bad": []}
    try:
        for _ in range(RUNS):
            for kind in ("good", "bad"):
                output = subprocess.run([sys.executable, __file__, "--page-child", kind],
                                        env=env, check=True, stdout=subprocess.PIPE,
                                        text=True).stdout
                figures[kind].append(json.loads(output.strip().splitlines()[-1]))
    finally:
        drop_database(name)
    print(f"100,000-line file posted to /evaluations/new/ on PostgreSQL; median of {RUNS}, "
          "each in a fresh process")
    for kind, label in (("good", "stored"), ("bad", f"line {BAD_LINE:,} bad")):
        runs = figures[kind]
        last = runs[-1]
        print(f"{label:<18} status {last['status']}  "
              f"{statistics.median(r['seconds'] for r in runs):6.2f} s  "
              f"peak RSS {statistics.median(r['peak'] for r in runs):6.1f} MB  "
              f"growth {statistics.median(r['growth'] for r in runs):6.1f} MB  "
              f"keywords added {last['keywords_added']:,}  "
              f"evaluations added {last['evaluations_added']}  errors {last['errors']}")
        report(f"100,000-line upload, {label}: peak RSS", "MB",
               {"100k": statistics.median(r["peak"] for r in runs)})
        report(f"100,000-line upload, {label}: seconds", "s",
               {"100k": statistics.median(r["seconds"] for r in runs)})


if __name__ == "__main__":
    if sys.argv[1:2] == ["--page-child"]:
        page_child(sys.argv[2])
    elif sys.argv[1:2] == ["--pages"]:
        pages()
    else:
        main()
