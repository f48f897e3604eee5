"""What a run of the suite says about its own time: the slowest tests, the total, and the
slow tests that do not say why they are slow.

A test whose setup, call and teardown together take more than SLOW_SECONDS carries
`@pytest.mark.slow_reason("...")`; docs/dev/testing.md says what counts as a reason.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

SLOW_SECONDS = 5.0
SLOW_MARKER = "slow_reason"


@dataclass(frozen=True)
class TimedTest:
    nodeid: str
    seconds: float
    says_why: bool


def times_per_test(reports: Iterable) -> list[TimedTest]:
    """One entry per test from pytest's reports (setup, call and teardown summed)."""
    seconds: dict[str, float] = defaultdict(float)
    says_why: dict[str, bool] = {}
    for report in reports:
        seconds[report.nodeid] += report.duration
        says_why[report.nodeid] = says_why.get(report.nodeid, False) or (
            SLOW_MARKER in report.keywords)
    return [TimedTest(nodeid, total, says_why[nodeid]) for nodeid, total in seconds.items()]


def slowest(times: list[TimedTest], count: int) -> list[TimedTest]:
    return sorted(times, key=lambda time: (-time.seconds, time.nodeid))[:count]


def slow_without_reason(times: list[TimedTest]) -> list[TimedTest]:
    return [time for time in slowest(times, len(times))
            if time.seconds > SLOW_SECONDS and not time.says_why]


def summary_lines(times: list[TimedTest], count: int) -> list[str]:
    """The lines `make test` prints above pytest's closing line."""
    if not times:
        return []
    total = sum(time.seconds for time in times)
    lines = [f"{len(times)} tests took {total:.1f} s of test time; the {min(count, len(times))}"
             " slowest:"]
    lines += [f"  {time.seconds:7.2f} s  {time.nodeid}" for time in slowest(times, count)]
    unmarked = slow_without_reason(times)
    if unmarked:
        lines.append(f"Over {SLOW_SECONDS:g} s without @pytest.mark.{SLOW_MARKER}(\"why\"): "
                     f"{len(unmarked)}")
        lines += [f"  {time.seconds:7.2f} s  {time.nodeid}" for time in unmarked]
    return lines
