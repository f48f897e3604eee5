"""How SearchTweak sends to other servers, once a request may go (searchtweak.outbound
decides where): retries with exponential backoff and Retry-After, the answer-size cap,
the slow-body deadline and the total deadline. Fetching (evaluations.fetching) and judges
(judges.core.sending) both follow these rules; each words its own errors.

Pure Python + httpx, no Django: judges.core, which must import without Django, uses it.
It sits outside searchtweak/ for that reason: importing anything under searchtweak/ runs
that package's Celery bootstrap, which loads Django.
"""

from __future__ import annotations

import math
import random as random_module
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

# Connecting is quick or it is not happening: a long endpoint timeout is for the answer.
CONNECT_TIMEOUT_CAP_SECONDS = 5.0
# Network failures worth another try: the request may not have reached the server, or the
# server broke mid-answer. A read timeout is not among them: a slow server stays slow.
TRANSIENT_ERRORS: tuple[type[httpx.HTTPError], ...] = (
    httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadError, httpx.WriteError,
    httpx.RemoteProtocolError, httpx.PoolTimeout)


def connect_timeout_seconds(timeout_seconds: float) -> float:
    return min(timeout_seconds, CONNECT_TIMEOUT_CAP_SECONDS)


def slow_body_seconds(timeout_seconds: float) -> float:
    """How long an answer may take to arrive whole, from the send: the read timeout bounds
    each pause, this bounds a server that trickles a byte at a time."""
    return timeout_seconds * 2


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to try again after a failure worth retrying.

    Wait before retry n (n = 1, 2, ...): b = min(max_backoff, backoff · 2^(n-1)); with
    `jitter`, "equal jitter" b/2 + U(0, b/2), so that workers rejected together do not
    return together. Never less than the server's Retry-After; a Retry-After longer than
    ``max_retry_after_seconds`` ends the call at once: holding a worker for minutes is
    worse than giving the work back and running again later.
    """

    max_attempts: int = 4
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = math.inf
    jitter: bool = False
    max_retry_after_seconds: float = math.inf

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def backoff(self, retry_number: int,
                random: Callable[[], float] = random_module.random) -> float:
        ceiling = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (retry_number - 1))
        return ceiling / 2 + random() * ceiling / 2 if self.jitter else ceiling

    def retry_after_refusal(self, retry_after: float | None) -> str:
        """Why a Retry-After ends the call (to add to its error), or "" when it may wait."""
        if retry_after is None or retry_after <= self.max_retry_after_seconds:
            return ""
        return (f" (Retry-After {retry_after:g} s is longer than the"
                f" {self.max_retry_after_seconds:g} s this call may wait)")

    def wait_before_retry(self, attempt_number: int, *, retry_after: float | None = None,
                          random: Callable[[], float] = random_module.random) -> float | None:
        """Seconds to sleep after attempt `attempt_number` failed in a way worth retrying,
        or None to stop: no attempt left, or a Retry-After this call may not wait."""
        if attempt_number >= self.max_attempts or self.retry_after_refusal(retry_after):
            return None
        wait = self.backoff(attempt_number, random)
        return wait if retry_after is None else max(wait, retry_after)


class AnswerTooLarge(Exception):
    """The answer is (or says it is) larger than the cap."""


class AnswerTooSlow(Exception):
    """The answer was still arriving at its slow-body deadline."""


class DeadlinePassed(Exception):
    """The whole exchange's deadline passed while the answer arrived."""


def read_body(response: httpx.Response, *, cap: int, slow_at: float,
              deadline_at: float | None = None) -> bytes:
    """The whole body of a streaming `response`, read chunk by chunk so that no answer
    costs more than `cap` bytes of memory: AnswerTooLarge past `cap` (a declared
    Content-Length past it, before reading), AnswerTooSlow once the monotonic clock passes
    `slow_at` (see slow_body_seconds), DeadlinePassed past `deadline_at`. The caller
    closes the response."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        raise AnswerTooLarge
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > cap:
            raise AnswerTooLarge
        now = time.monotonic()
        if deadline_at is not None and now >= deadline_at:
            raise DeadlinePassed
        if now > slow_at:
            raise AnswerTooSlow
    return bytes(body)
