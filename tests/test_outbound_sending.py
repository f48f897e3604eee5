"""The sending rules fetching and judges share (searchtweak.outbound_sending): backoff, Retry-After,
the answer-size cap, the slow-body and total deadlines; and that judges.core may use them
(no Django)."""

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from evaluations.fetching import search_requests
from judges.core import sending
from searchtweak import outbound_sending
from searchtweak.outbound_sending import (
    AnswerTooLarge,
    AnswerTooSlow,
    DeadlinePassed,
    RetryPolicy,
    read_body,
)

REPO = Path(__file__).resolve().parents[1]


def test_it_imports_without_django():
    completed = subprocess.run(
        [sys.executable, "-c", "import sys, searchtweak.outbound_sending\n"
         "assert not [n for n in sys.modules if n.split('.')[0] == 'django']"],
        capture_output=True, text=True, cwd=REPO, env={"PATH": "/usr/bin:/bin"}, timeout=60,
        check=False)
    assert completed.returncode == 0, completed.stderr


def test_backoff_doubles_up_to_its_ceiling_with_equal_jitter_when_asked():
    plain = RetryPolicy(max_attempts=5, backoff_seconds=0.5)
    assert [plain.backoff(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    jittered = RetryPolicy(backoff_seconds=1.0, max_backoff_seconds=3.0, jitter=True)
    assert [jittered.backoff(n, random=lambda: 0.0) for n in (1, 2, 3)] == [0.5, 1.0, 1.5]
    assert [jittered.backoff(n, random=lambda: 1.0) for n in (1, 2, 3)] == [1.0, 2.0, 3.0]


def test_a_retry_waits_at_least_its_retry_after_and_stops_past_the_cap_or_the_attempts():
    policy = RetryPolicy(max_attempts=3, backoff_seconds=1.0, max_retry_after_seconds=60)
    assert policy.wait_before_retry(1) == 1.0
    assert policy.wait_before_retry(1, retry_after=7) == 7.0
    assert policy.wait_before_retry(2, retry_after=0.5) == 2.0
    assert policy.wait_before_retry(3) is None
    assert policy.wait_before_retry(1, retry_after=61) is None
    assert policy.retry_after_refusal(61) == (
        " (Retry-After 61 s is longer than the 60 s this call may wait)")
    assert policy.retry_after_refusal(60) == policy.retry_after_refusal(None) == ""
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_both_callers_follow_the_shared_policy(settings):
    settings.FETCH_RETRIES, settings.FETCH_RETRY_BACKOFF_MS = 2, 250
    fetch = search_requests.retry_policy()
    assert isinstance(fetch, RetryPolicy)
    assert (fetch.max_attempts, fetch.jitter, [fetch.wait_before_retry(n) for n in (1, 2, 3)]
            ) == (3, False, [0.25, 0.5, None])
    judge = sending.RetryPolicy()
    assert isinstance(judge, RetryPolicy)
    assert (judge.jitter, judge.max_backoff_seconds, judge.max_retry_after_seconds) == (
        True, 30.0, 120.0)


def streamed(chunks, headers=None) -> httpx.Response:
    return httpx.Response(200, headers=headers or {}, content=iter(chunks))


def test_the_body_is_read_whole_within_the_cap():
    assert read_body(streamed([b"ab", b"cd"]), cap=4, slow_at=time.monotonic() + 60) == b"abcd"


def test_a_body_past_the_cap_or_declaring_it_is_refused():
    with pytest.raises(AnswerTooLarge):
        read_body(streamed([b"ab", b"cde"]), cap=4, slow_at=time.monotonic() + 60)
    declared = streamed([b"a"], headers={"Content-Length": "5"})
    with pytest.raises(AnswerTooLarge):
        read_body(declared, cap=4, slow_at=time.monotonic() + 60)


def test_a_trickling_body_meets_the_slow_deadline_or_the_total_one_first():
    with pytest.raises(AnswerTooSlow):
        read_body(streamed([b"a"]), cap=4, slow_at=time.monotonic() - 1)
    with pytest.raises(DeadlinePassed):
        read_body(streamed([b"a"]), cap=4, slow_at=time.monotonic() - 1,
                  deadline_at=time.monotonic() - 1)
    assert outbound_sending.slow_body_seconds(5) == 10
    assert outbound_sending.connect_timeout_seconds(30) == 5.0
    assert outbound_sending.connect_timeout_seconds(2) == 2
