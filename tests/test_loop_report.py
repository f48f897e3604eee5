"""What `make test` says of its own time: per-test totals, the slowest, the total, and the
slow tests that do not say why."""

from dataclasses import dataclass, field

from tests.loop_report import (
    SLOW_SECONDS,
    TimedTest,
    slow_without_reason,
    slowest,
    summary_lines,
    times_per_test,
)


@dataclass
class Report:
    """The parts of pytest's TestReport that the summary reads."""

    nodeid: str
    duration: float
    keywords: dict = field(default_factory=dict)


def test_a_tests_setup_call_and_teardown_are_summed():
    times = times_per_test([Report("a", 0.5), Report("b", 1.0), Report("a", 4.0),
                            Report("a", 0.75)])
    assert {time.nodeid: time.seconds for time in times} == {"a": 5.25, "b": 1.0}


def test_the_marker_on_any_phase_marks_the_test():
    times = times_per_test([Report("a", 3.0), Report("a", 3.0, {"slow_reason": 1})])
    assert times == [TimedTest("a", 6.0, True)]


def test_slowest_orders_by_time_then_name_and_keeps_count():
    times = [TimedTest("c", 1.0, False), TimedTest("b", 2.0, False),
             TimedTest("a", 2.0, False)]
    assert [time.nodeid for time in slowest(times, 2)] == ["a", "b"]


def test_a_test_exactly_at_the_limit_needs_no_reason_and_one_over_it_does():
    times = [TimedTest("at", SLOW_SECONDS, False), TimedTest("over", SLOW_SECONDS + 0.01, False),
             TimedTest("says", 60.0, True)]
    assert slow_without_reason(times) == [TimedTest("over", 5.01, False)]


def test_the_summary_names_the_total_the_slowest_and_the_unmarked():
    times = [TimedTest("tests/a.py::slow", 7.5, False), TimedTest("tests/a.py::fast", 0.25, False),
             TimedTest("tests/b.py::browser", 12.0, True)]
    assert summary_lines(times, 2) == [
        "3 tests took 19.8 s of test time; the 2 slowest:",
        "    12.00 s  tests/b.py::browser",
        "     7.50 s  tests/a.py::slow",
        'Over 5 s without @pytest.mark.slow_reason("why"): 1',
        "     7.50 s  tests/a.py::slow",
    ]
    assert summary_lines([], 15) == []
