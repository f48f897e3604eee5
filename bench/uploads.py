"""How soon a keyword file far over the limits is refused (part of `make bench`).

    .venv/bin/python bench/uploads.py

Two files, as a person might pick them by mistake:
- "54 MB": 2.45 million lines. The form refuses it from its size (KEYWORD_UPLOAD_MAX_BYTES,
  default 5 MB) before reading it; the reference is what happened before the cap: every
  line parsed, then "At most 10,000 keywords".
- "3.6 MB, 260k lines": under the size cap, so it is read, and reading stops at the first line
  past 10,000 keywords; the reference parses every line (max_keywords set out of reach).
Each figure is the median of 3 runs (the 54 MB reference parses for tens of seconds, so
there is no warm-up), reference and capped alternating, with the ratio of the medians; no
thresholds are asserted.
"""

from __future__ import annotations

import os
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

from evaluations.services import keyword_upload_size_problem, keywords_from_upload  # noqa: E402

RUNS = 3


def refused(action: Callable[[], object]) -> None:
    try:
        action()
    except ValidationError:
        return
    raise SystemExit("expected the file to be refused")


def parse_everything(content: bytes) -> None:
    lines = keywords_from_upload(filename="k.txt", content=content, max_keywords=sys.maxsize)
    if len(lines) <= 10_000:
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


if __name__ == "__main__":
    main()
