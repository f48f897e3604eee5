"""Per-endpoint limits shared by every process that sends to the endpoint: at most
`max_concurrent` requests in flight and `per_minute` requests started in any 60 seconds
(Quepid's requests_per_minute). Fetching, Test and judges take a turn before each request.
A team's Tests (search models', endpoints' and judges') also take one of the team's
`team_test_turn`s: a Test holds a web worker while the page waits, so a hanging engine
must not let one team hold them all.

With OUTBOUND_LIMITS_REDIS_URL (by default the Redis broker) the counts live in Redis, so
N workers together respect the limit; without Redis (SQLite + eager Celery, one process)
they live in this process, behind the same interface.

A turn in flight is a lease that expires (`lease_seconds`): a process killed mid-request
frees its turn when the lease runs out instead of holding it for ever.

Concurrency turns are shared fairly between the processes asking for them (`turn`, in
Redis): while several ask, none holds more than its share (the limit divided among them,
rounded up). Taken by whichever thread asked first, most of a limit's turns gathered in
one of several fetch processes, whose requests then waited for its GIL; shared fairly, a
large fetch ran closer to a bare client's floor (bench/fetch.py --shared-limit, figures in
bench/RESULTS.md).
"""

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Protocol

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60.0
POLL_SECONDS = 0.05


class LimitWaitExceeded(Exception):
    """No turn came within the wait allowed."""


class TestsBusy(ValidationError):
    """The team already runs OUTBOUND_TESTS_PER_TEAM Tests. A ValidationError (not a field's)
    so every form and API that shows a Test's bad input shows this too; the evaluations
    pages and API answer it with 429."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, message: str) -> None:
        super().__init__({NON_FIELD_ERRORS: [message]})
        self.reason = message


class Limiter(Protocol):
    def try_acquire(self, key: str, token: str, *, max_concurrent: int | None,
                    per_minute: int | None, now: float, lease_seconds: float,
                    group: str = "") -> bool: ...

    def release(self, key: str, token: str) -> None: ...


class LocalLimiter:
    """The counts of this process only: right when it is the only one sending."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight: dict[str, dict[str, float]] = {}
        self._started: dict[str, deque[float]] = {}

    def try_acquire(self, key: str, token: str, *, max_concurrent: int | None,
                    per_minute: int | None, now: float, lease_seconds: float,
                    group: str = "") -> bool:
        # One process: `group` (which process asks) has no one to share with.
        with self._lock:
            leases = self._in_flight.setdefault(key, {})
            for expired in [t for t, until in leases.items() if until <= now]:
                del leases[expired]
            if max_concurrent and len(leases) >= max_concurrent:
                return False
            if per_minute:
                started = self._started.setdefault(key, deque())
                while started and started[0] <= now - WINDOW_SECONDS:
                    started.popleft()
                if len(started) >= per_minute:
                    return False
                started.append(now)
            leases[token] = now + lease_seconds
            return True

    def release(self, key: str, token: str) -> None:
        with self._lock:
            self._in_flight.get(key, {}).pop(token, None)


# KEYS: in-flight leases (token -> expiry), starts in the window (token -> start time),
# the groups that asked lately (group -> when).
# ARGV: now, token, max_concurrent (0: none), per_minute (0: none), lease expiry, window,
# the asking group ('' : none; its tokens start with "<group>|"), how long an ask counts.
_ACQUIRE = """
local now = tonumber(ARGV[1])
local max_concurrent = tonumber(ARGV[3])
local per_minute = tonumber(ARGV[4])
local window = tonumber(ARGV[6])
local group = ARGV[7]
local asking_window = tonumber(ARGV[8])
local sharing = max_concurrent > 0 and group ~= ''
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
-- Counted as asking before any refusal: a process that waits is one to share with.
if sharing then
  redis.call('ZADD', KEYS[3], now, group)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - asking_window)
  redis.call('EXPIRE', KEYS[3], math.ceil(asking_window) + 60)
end
if max_concurrent > 0 and redis.call('ZCARD', KEYS[1]) >= max_concurrent then return 0 end
local groups = sharing and redis.call('ZCARD', KEYS[3]) or 0
if groups > 1 then
  local prefix = group .. '|'
  local held = 0
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    if string.sub(member, 1, #prefix) == prefix then held = held + 1 end
  end
  if held >= math.ceil(max_concurrent / groups) then return 0 end
end
if per_minute > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  if redis.call('ZCARD', KEYS[2]) >= per_minute then return 0 end
  redis.call('ZADD', KEYS[2], now, ARGV[2])
  redis.call('EXPIRE', KEYS[2], math.ceil(window) + 60)
end
redis.call('ZADD', KEYS[1], tonumber(ARGV[5]), ARGV[2])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[5]) - now) + 60)
return 1
"""


class RedisLimiter:
    """The counts of every process using this Redis. Times come from the callers' clocks,
    so hosts sharing a limit need synchronised clocks (NTP). While Redis cannot be
    reached the counts fall back to this process's: a Test must not fail for it, and a
    fetch without a broker is not running anyway."""

    def __init__(self, url: str) -> None:
        import redis

        self._redis = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._errors = (redis.RedisError, OSError)

    def try_acquire(self, key: str, token: str, *, max_concurrent: int | None,
                    per_minute: int | None, now: float, lease_seconds: float,
                    group: str = "") -> bool:
        """`group` names the asking process; its tokens start with "<group>|". While
        other groups asked within ASKING_SECONDS, it gets no more than its share."""
        keys = [f"searchtweak:outbound:{key}:in-flight", f"searchtweak:outbound:{key}:starts",
                f"searchtweak:outbound:{key}:asking"]
        try:
            return self._acquire(keys=keys, args=[
                repr(now), token, max_concurrent or 0, per_minute or 0,
                repr(now + lease_seconds), repr(WINDOW_SECONDS), group, repr(ASKING_SECONDS),
            ]) == 1
        except self._errors as error:
            logger.warning("outbound limits: Redis unreachable (%s); counting in this "
                           "process only", error)
            return _local.try_acquire(key, token, max_concurrent=max_concurrent,
                                      per_minute=per_minute, now=now,
                                      lease_seconds=lease_seconds)

    def release(self, key: str, token: str) -> None:
        _local.release(key, token)
        with contextlib.suppress(*self._errors):  # else the lease expires on its own
            self._redis.zrem(f"searchtweak:outbound:{key}:in-flight", token)


_local = LocalLimiter()


@cache
def _redis_limiter(url: str) -> RedisLimiter:
    return RedisLimiter(url)


def limiter() -> Limiter:
    url = settings.OUTBOUND_LIMITS_REDIS_URL
    return _redis_limiter(url) if url else _local


# How long a thread inside turns_kept may keep a turn it took before giving it back and
# asking again (the others' chance at it). Far below any lease (an attempt's length
# + 10 s), so a turn kept and used again cannot expire mid-request.
KEEP_TURN_SECONDS = 1.0
# How long a process counts as asking for turns after it last asked: longer than it keeps
# a turn, since a process whose threads all keep theirs asks only when one expires.
ASKING_SECONDS = 1.5 * KEEP_TURN_SECONDS


def process_group() -> str:
    """This process, as the fair sharing of turns names it (the pid changes with a fork)."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class _Kept:
    limiter: Limiter
    token: str
    taken_at: float


_kept_turns = threading.local()


@contextmanager
def turns_kept(*, hold_seconds: float = KEEP_TURN_SECONDS) -> Iterator[None]:
    """Within the block, this thread keeps each concurrency turn it takes between requests
    (up to `hold_seconds` after taking it) instead of giving it back and asking again for
    the next: a fetch thread sends request after request, and two Redis round trips for
    each were a third of its work. A kept turn still counts as in flight, so the limit
    holds; per-minute limits count every start and are never kept. Every kept turn is
    given back when the block ends."""
    outer = getattr(_kept_turns, "turns", None), getattr(_kept_turns, "hold", None)
    _kept_turns.turns, _kept_turns.hold = {}, hold_seconds
    try:
        yield
    finally:
        kept: dict[str, _Kept] = _kept_turns.turns
        _kept_turns.turns, _kept_turns.hold = outer
        for key, held in kept.items():
            held.limiter.release(key, held.token)


def _kept_turn(key: str, backend: Limiter, now: float) -> _Kept | None:
    """The turn of `key` this thread kept, when it may still use it; one it may not is
    given back."""
    held = _kept_turns.turns.pop(key, None)
    if held is not None and (held.limiter is not backend
                             or now - held.taken_at >= _kept_turns.hold):
        held.limiter.release(key, held.token)
        return None
    return held


@contextmanager
def turn(key: str, *, max_concurrent: int | None, per_minute: int | None,
         wait_seconds: float, lease_seconds: float, limiter_: Limiter | None = None,
         clock: Callable[[], float] = time.time,
         sleep: Callable[[float], None] = time.sleep) -> Iterator[None]:
    """Hold one of `key`'s turns for the block, waiting at most `wait_seconds` for it.
    Raises LimitWaitExceeded when none comes in time. No limits: no wait, no bookkeeping."""
    if not max_concurrent and not per_minute:
        yield
        return
    backend = limiter_ or limiter()
    keeping = getattr(_kept_turns, "turns", None) is not None and not per_minute
    held = _kept_turn(key, backend, clock()) if keeping else None
    if held is None:
        group = process_group()
        token = f"{group}|{uuid.uuid4().hex}"
        give_up_at = clock() + wait_seconds
        while not backend.try_acquire(key, token, max_concurrent=max_concurrent,
                                      per_minute=per_minute, now=clock(),
                                      lease_seconds=lease_seconds, group=group):
            if clock() >= give_up_at:
                raise LimitWaitExceeded(_wait_message(max_concurrent, per_minute, wait_seconds))
            sleep(POLL_SECONDS)
        held = _Kept(backend, token, clock())
    try:
        yield
    finally:
        if keeping:
            _kept_turns.turns[key] = held
        else:
            backend.release(key, held.token)


def _wait_message(max_concurrent: int | None, per_minute: int | None, waited: float) -> str:
    limits = [f"{max_concurrent} at a time" if max_concurrent else "",
              f"{per_minute} a minute" if per_minute else ""]
    return (f"no turn to send within {waited:g} s: the endpoint allows "
            f"{' and '.join(limit for limit in limits if limit)} requests")


@contextmanager
def team_test_turn(*, team_id: int, limiter_: Limiter | None = None) -> Iterator[None]:
    """Hold one of the team's OUTBOUND_TESTS_PER_TEAM Test turns and one of the site's
    OUTBOUND_TESTS_SITE_WIDE for the block, counted over all web processes (Redis) or in
    this one. Raises TestsBusy at once when either has none free: waiting would hold the
    web worker the caps are there to spare. The team's cap keeps one team from taking the
    site's turns; the site's keeps many teams (anyone may create one) from taking every
    web worker."""
    backend = limiter_ or limiter()
    # A process killed mid-Test frees its turns once the Test could no longer be running.
    lease = settings.OUTBOUND_TEST_DEADLINE_SECONDS + 30
    team_cap, site_cap = settings.OUTBOUND_TESTS_PER_TEAM, settings.OUTBOUND_TESTS_SITE_WIDE
    with _test_turn(backend, f"tests:team:{team_id}", team_cap, lease, (
            f"This team already runs {team_cap} Test{'s' if team_cap != 1 else ''} at once "
            "(OUTBOUND_TESTS_PER_TEAM), waiting for an engine or a judge to answer; try "
            "again when one has finished.")), \
            _test_turn(backend, "tests:site", site_cap, lease, (
                f"The site already runs {site_cap} Test{'s' if site_cap != 1 else ''} at "
                "once (OUTBOUND_TESTS_SITE_WIDE), waiting for engines or judges to answer; "
                "try again in a moment.")):
        yield


@contextmanager
def _test_turn(backend: Limiter, key: str, cap: int, lease: float,
               busy: str) -> Iterator[None]:
    token = uuid.uuid4().hex
    if not backend.try_acquire(key, token, max_concurrent=cap, per_minute=None,
                               now=time.time(), lease_seconds=lease):
        raise TestsBusy(busy)
    try:
        yield
    finally:
        backend.release(key, token)
