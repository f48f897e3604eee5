"""Per-endpoint limits shared by workers (searchtweak.outbound_limits), in Redis and, with
no Redis, in-process: concurrency seen by a real server, requests per minute on a clock
the test controls, and leases that free the turns of a killed worker."""

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from evaluations.fetching.search_requests import RequestSpec, fetch_keyword_results, new_client
from searchtweak import outbound_limits
from searchtweak.outbound_limits import (
    LimitWaitExceeded,
    LocalLimiter,
    RedisLimiter,
    TestsBusy,
    team_test_turn,
    turn,
)
from tests.evaluations.factories import ES_MAPPER
from tests.evaluations.servers import Reply, hits, running_server
from tests.workers import require_redis


@pytest.fixture(params=["local", "redis"])
def backend(request, settings):
    """The limiter kind, and a factory of limiters as separate workers would each hold."""
    if request.param == "redis":
        url = require_redis()
        settings.OUTBOUND_LIMITS_REDIS_URL = url
        return lambda: RedisLimiter(url)
    settings.OUTBOUND_LIMITS_REDIS_URL = ""
    shared = LocalLimiter()
    # Without Redis every "worker" is a thread of this one process: one set of counts.
    return lambda: shared


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def key() -> str:
    return f"test:{uuid.uuid4().hex}"


def test_requests_per_minute_wait_for_the_window_to_move(backend):
    limiter, clock, endpoint = backend(), FakeClock(), key()
    limits = {"max_concurrent": None, "per_minute": 3, "lease_seconds": 30,
              "limiter_": limiter, "clock": clock, "sleep": clock.sleep}
    for _ in range(3):
        with turn(endpoint, wait_seconds=0, **limits):
            clock.now += 1
    with pytest.raises(LimitWaitExceeded, match="allows 3 a minute requests"), \
            turn(endpoint, wait_seconds=10, **limits):
        pass
    assert clock.now == pytest.approx(1_000_013.0)

    with turn(endpoint, wait_seconds=120, **limits):
        # The first of the three started at 1_000_000: its minute ends at 1_000_060.
        assert 1_000_060.0 <= clock.now < 1_000_060.1


def test_a_turn_never_released_frees_itself_when_its_lease_ends(backend):
    limiter, clock, endpoint = backend(), FakeClock(), key()
    # A worker killed mid-request: it took a turn and will never release it.
    assert limiter.try_acquire(endpoint, "killed", max_concurrent=1, per_minute=None,
                               now=clock.now, lease_seconds=30)
    limits = {"max_concurrent": 1, "per_minute": None, "lease_seconds": 30,
              "limiter_": limiter, "clock": clock, "sleep": clock.sleep}
    with pytest.raises(LimitWaitExceeded, match="allows 1 at a time requests"), \
            turn(endpoint, wait_seconds=5, **limits):
        pass
    with turn(endpoint, wait_seconds=60, **limits):
        assert 1_000_030.0 <= clock.now < 1_000_030.1


# --- turns shared fairly between processes (Redis) --------------------------------------


def test_a_process_gets_no_more_than_its_share_of_turns_while_another_asks():
    limiter, clock, endpoint = RedisLimiter(require_redis()), FakeClock(), key()

    def ask(group: str, n: int) -> bool:
        return limiter.try_acquire(endpoint, f"{group}|{n}", max_concurrent=4,
                                   per_minute=None, now=clock.now, lease_seconds=30,
                                   group=group)

    # Alone, a process may take every turn.
    assert [ask("a", n) for n in range(4)] == [True] * 4
    # Another asks: refused (all 4 are taken), but it now counts as asking.
    assert ask("b", 0) is False
    # The first gives one back and asks again: over its share (4 / 2), so refused, and
    # the turn goes to the other, up to its own share.
    limiter.release(endpoint, "a|3")
    assert ask("a", 4) is False
    assert ask("b", 1) is True
    limiter.release(endpoint, "a|2")
    assert [ask("b", 2), ask("b", 3)] == [True, False]
    # A third process takes the turn left free; the limit still holds for all three.
    limiter.release(endpoint, "b|1")
    assert [ask("c", 0), ask("c", 1)] == [True, False]
    # Once the others stop asking (ASKING_SECONDS), the one left may take every turn.
    for token in ("a|0", "a|1", "b|2", "c|0"):
        limiter.release(endpoint, token)
    clock.now += outbound_limits.ASKING_SECONDS + 0.1
    assert [ask("a", n) for n in range(5, 9)] == [True] * 4


@pytest.mark.parametrize(("asked_ago", "turns"), [
    (1.0, [True, True, False]), (1.49, [True, True, False]), (1.5, [True, True, True, True])])
def test_a_process_that_asked_under_1_5_seconds_ago_still_halves_the_others_share(
        asked_ago, turns):
    limiter, clock, endpoint = RedisLimiter(require_redis()), FakeClock(), key()

    def ask(group: str, n: int) -> bool:
        return limiter.try_acquire(endpoint, f"{group}|{n}", max_concurrent=4,
                                   per_minute=None, now=clock.now, lease_seconds=30,
                                   group=group)

    assert ask("b", 0) is True
    limiter.release(endpoint, "b|0")
    clock.now += asked_ago
    # Longer than a kept turn (1 s): a process whose threads all keep their turns asks
    # only when one expires, and still counts until then.
    assert [ask("a", n) for n in range(len(turns))] == turns


def test_a_turn_is_taken_in_the_name_of_this_process(settings):
    import redis

    url = require_redis()
    settings.OUTBOUND_LIMITS_REDIS_URL = url
    clock, endpoint = FakeClock(), key()
    limits = {"max_concurrent": 4, "per_minute": None, "lease_seconds": 30, "clock": clock,
              "sleep": clock.sleep, "wait_seconds": 0}
    # Another process holds one turn of 4: this one's share is 2, though a third is free.
    assert RedisLimiter(url).try_acquire(endpoint, "elsewhere|1", max_concurrent=4,
                                         per_minute=None, now=clock.now, lease_seconds=30,
                                         group="elsewhere")
    with turn(endpoint, **limits), turn(endpoint, **limits):
        held = redis.Redis.from_url(url).zrange(
            f"searchtweak:outbound:{endpoint}:in-flight", 0, -1)
        with pytest.raises(LimitWaitExceeded), turn(endpoint, **limits):
            pass
    assert sorted(token.decode().split("|")[0] for token in held) == sorted(
        ["elsewhere", outbound_limits.process_group(), outbound_limits.process_group()])


class CountingServer:
    """Counts the requests it is answering at once."""

    def __init__(self, server) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most = 0
        self.release = threading.Event()
        server.handler = self.handle

    def handle(self, request) -> Reply:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        # Hold each request until a second one could have arrived beside it (or a bound).
        self.release.wait(0.2)
        with self.lock:
            self.in_flight -= 1
        return Reply(body=hits(request.query["q"][0]))


def test_two_workers_together_never_exceed_the_endpoints_concurrency(backend, settings):
    settings.FETCH_RETRY_BACKOFF_MS = 5
    endpoint_id = uuid.uuid4().int % 10**9
    with running_server() as server:
        counting = CountingServer(server)
        spec = RequestSpec(
            endpoint_id=endpoint_id, method="GET", url=f"{server.url}/search",
            params={"q": "#query#"}, headers={}, body=None, body_format="json",
            timeout_seconds=5, mapper=ES_MAPPER, limit=10, max_concurrent_requests=2,
        )

        def worker(name: str) -> list[bool]:
            # Each worker process holds its own limiter (its own Redis connection).
            outbound_limits._redis_limiter.cache_clear()
            with new_client(timeout_seconds=5, connections=8) as client, \
                    ThreadPoolExecutor(max_workers=8) as pool:
                return list(pool.map(lambda n: fetch_keyword_results(
                    spec, f"{name}-{n}", client=client).ok, range(8)))

        with ThreadPoolExecutor(max_workers=2) as workers:
            outcomes = list(workers.map(worker, ["a", "b"]))

    assert outcomes == [[True] * 8, [True] * 8]
    assert len(server.received) == 16
    # Exactly 2: never more, and a limiter that serialised everything (1) fails too.
    assert counting.most == 2
    assert counting.in_flight == 0


def test_no_limits_take_no_turns(backend):
    limiter, clock = backend(), FakeClock()
    for _ in range(100):
        with turn(key(), max_concurrent=None, per_minute=None, wait_seconds=0,
                  lease_seconds=1, limiter_=limiter, clock=clock, sleep=clock.sleep):
            pass
    assert clock.now == 1_000_000.0


def test_an_unreachable_redis_falls_back_to_counting_in_this_process():
    # Port 9 (discard) on 127.0.0.1: nothing listens, the connection is refused at once.
    limiter, clock, endpoint = RedisLimiter("redis://127.0.0.1:9/0"), FakeClock(), key()
    limits = {"max_concurrent": 1, "per_minute": None, "lease_seconds": 30,
              "limiter_": limiter, "clock": clock, "sleep": clock.sleep}
    # The first turn is held in this process while a second one is refused.
    with turn(endpoint, wait_seconds=0, **limits), pytest.raises(LimitWaitExceeded), \
            turn(endpoint, wait_seconds=0, **limits):
        pass
    with turn(endpoint, wait_seconds=0, **limits):
        pass


# --- a fetch thread keeps its turn between requests (turns_kept) ----------------------------


class CountingLimiter:
    """A limiter that counts the calls reaching it."""

    def __init__(self, inner) -> None:
        self.inner, self.acquired, self.released = inner, 0, 0

    def try_acquire(self, *args, **kwargs) -> bool:
        self.acquired += 1
        return self.inner.try_acquire(*args, **kwargs)

    def release(self, *args) -> None:
        self.released += 1
        self.inner.release(*args)


def test_a_thread_keeping_turns_asks_once_per_hold_and_gives_back_at_the_end(backend):
    limiter, clock, endpoint = CountingLimiter(backend()), FakeClock(), key()
    limits = {"max_concurrent": 2, "per_minute": None, "lease_seconds": 30,
              "limiter_": limiter, "clock": clock, "sleep": clock.sleep, "wait_seconds": 0}
    with outbound_limits.turns_kept(hold_seconds=1.0):
        for _ in range(5):
            with turn(endpoint, **limits):
                clock.now += 0.15
        assert (limiter.acquired, limiter.released) == (1, 0)
        clock.now += 0.5  # 1.25 s after it was taken: given back, taken anew
        with turn(endpoint, **limits):
            pass
        assert (limiter.acquired, limiter.released) == (2, 1)
    assert (limiter.acquired, limiter.released) == (2, 2)
    # Given back for real: both turns are free for another worker.
    other = backend()
    with turn(endpoint, **{**limits, "limiter_": other}), \
            turn(endpoint, **{**limits, "limiter_": other}):
        pass


def test_a_kept_turn_still_counts_as_in_flight(backend):
    clock, endpoint = FakeClock(), key()
    limits = {"max_concurrent": 1, "per_minute": None, "lease_seconds": 30, "clock": clock,
              "sleep": clock.sleep, "wait_seconds": 0}
    keeper, other = backend(), backend()

    def other_worker_sends() -> bool:
        try:
            with turn(endpoint, limiter_=other, **limits):
                return True
        except LimitWaitExceeded:
            return False

    with ThreadPoolExecutor(max_workers=1) as elsewhere, outbound_limits.turns_kept():
        with turn(endpoint, limiter_=keeper, **limits):
            pass
        # Between two of the keeper's requests its turn is still taken.
        assert elsewhere.submit(other_worker_sends).result() is False
    assert other_worker_sends() is True


def test_per_minute_limits_count_every_request_even_when_turns_are_kept(backend):
    limiter, clock, endpoint = CountingLimiter(backend()), FakeClock(), key()
    limits = {"max_concurrent": 5, "per_minute": 3, "lease_seconds": 30, "limiter_": limiter,
              "clock": clock, "sleep": clock.sleep, "wait_seconds": 0}
    with outbound_limits.turns_kept():
        for _ in range(3):
            with turn(endpoint, **limits):
                pass
        with pytest.raises(LimitWaitExceeded, match="3 a minute"), turn(endpoint, **limits):
            pass
    assert (limiter.acquired, limiter.released) == (4, 3)


@pytest.mark.django_db
def test_a_fetchs_threads_keep_their_turns_and_stay_within_the_limit(
        backend, settings, monkeypatch):
    from evaluations.fetching import services as fetch_services
    from evaluations.services import lifecycle
    from tests.evaluations.factories import fetchable_evaluation

    settings.FETCH_CONCURRENCY_PER_ENDPOINT = 3
    counting = CountingLimiter(backend())
    monkeypatch.setattr(outbound_limits, "limiter", lambda: counting)
    with running_server() as server:
        in_flight = CountingServer(server)
        evaluation = fetchable_evaluation(url=server.url, keywords=[f"k{n}" for n in range(12)],
                                          max_concurrent_requests=3)
        lifecycle.evaluation_start(evaluation=evaluation)
        ids = list(evaluation.keywords.values_list("pk", flat=True))
        assert fetch_services.keywords_fetch(evaluation_id=evaluation.pk, keyword_ids=ids) == 12
    assert in_flight.most == 3
    # Three threads, four requests each within a second: a turn each, not one a request.
    assert 3 <= counting.acquired <= 6, counting.acquired
    assert counting.released == counting.acquired


# --- a team's Tests at once (team_test_turn) -------------------------------------------------


def test_a_teams_test_turns_are_shared_by_every_process(backend, settings):
    settings.OUTBOUND_TESTS_PER_TEAM = 2
    settings.OUTBOUND_TESTS_SITE_WIDE = 10  # the team's cap, not the site's, is tried here
    team_id = uuid.uuid4().int % 10**9  # a team no other run of this test uses
    first, second, third = backend(), backend(), backend()
    with team_test_turn(team_id=team_id, limiter_=first), \
            team_test_turn(team_id=team_id, limiter_=second):
        with pytest.raises(TestsBusy, match=r"^\{'__all__': \['This team already runs 2 "
                                            r"Tests at once \(OUTBOUND_TESTS_PER_TEAM\)"), \
                team_test_turn(team_id=team_id, limiter_=third):
            pass
        with team_test_turn(team_id=team_id + 1, limiter_=third):
            pass  # another team's turns are its own
    with team_test_turn(team_id=team_id, limiter_=third):
        pass  # given back when the blocks ended


def test_the_sites_test_turns_are_shared_by_every_process_and_team(backend, settings):
    settings.OUTBOUND_TESTS_PER_TEAM = 2
    settings.OUTBOUND_TESTS_SITE_WIDE = 2
    team_id = uuid.uuid4().int % 10**9
    first, second, third = backend(), backend(), backend()
    busy = r"^\{'__all__': \['The site already runs 2 Tests at once \(OUTBOUND_TESTS_SITE_WIDE\)"
    with team_test_turn(team_id=team_id, limiter_=first), \
            team_test_turn(team_id=team_id + 1, limiter_=second), \
            pytest.raises(TestsBusy, match=busy), \
            team_test_turn(team_id=team_id + 2, limiter_=third):
        pass
    # Given back when the blocks ended, and the refused Test gave back the team turn it
    # had taken first: its team holds both of its turns again.
    with team_test_turn(team_id=team_id + 2, limiter_=third), \
            team_test_turn(team_id=team_id + 2, limiter_=first):
        pass


@pytest.mark.django_db
def test_a_judges_test_takes_one_of_its_teams_test_turns(client, personas, settings):
    from judges import services as judge_services
    from tests.judges.fake_providers import OPENAI, answer, fake_provider

    settings.OUTBOUND_TESTS_PER_TEAM = 1
    settings.OUTBOUND_LIMITS_REDIS_URL = ""
    client.force_login(personas.admin)
    with fake_provider(OPENAI, api_key="sk-judge-test-1234567890") as provider:
        provider.then(answer({"grades": [{"id": "d1", "grade": 1, "reason": "a chair"}]}))
        judge = judge_services.judge_create(
            team=personas.team, by=None, name="J", provider="openai", model="m",
            api_key="sk-judge-test-1234567890", base_url=provider.base_url)
        form = {"keyword": "chair", "scale": "binary",
                "documents": '{"id": "d1", "fields": {"title": "Office chair"}}'}
        with team_test_turn(team_id=personas.team.pk):
            refused = client.post(f"/judges/{judge.pk}/test/", form)
        assert provider.received == []
        allowed = client.post(f"/judges/{judge.pk}/test/", form)
        assert len(provider.received) == 1

    assert refused.status_code == 400
    assert "This team already runs 1 Test at once (OUTBOUND_TESTS_PER_TEAM)" in \
        refused.content.decode()
    assert allowed.status_code == 200
