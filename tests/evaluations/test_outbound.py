"""Outbound rules as fetching and Test meet them (searchtweak.outbound): secrets stay at
their origin, the network policy holds on the address really reached, Test ends before
the web server would kill it. Every server here is a real one on 127.0.0.x."""

import runpy
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.utils.html import escape
from rest_framework.test import APIClient

from evaluations.endpoints import services as endpoint_services
from evaluations.models import Endpoint, Evaluation, Keyword, SearchModel
from evaluations.services import lifecycle
from searchtweak import outbound_limits
from searchtweak.outbound_limits import TestsBusy
from tests.evaluations.factories import ES_MAPPER, fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server

pytestmark = pytest.mark.django_db

SECRET = "sk-live-1234567890abcd"


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.FETCH_RETRY_BACKOFF_MS = 5


@pytest.fixture
def home():
    with running_server() as server:
        yield server


@pytest.fixture
def elsewhere():
    with running_server() as server:
        yield server


def secured_model(personas, url: str, **endpoint_fields):
    endpoint = endpoint_services.endpoint_create(
        team=personas.team, created_by=personas.admin, name="Secure", url=url,
        mapper=ES_MAPPER, headers={"X-Tenant": "acme"}, secret_headers={"X-Api-Key": SECRET},
        **endpoint_fields,
    )
    return endpoint_services.search_model_create(
        team=personas.team, created_by=personas.admin,
        endpoint=endpoint, name="m", params={"q": "#query#"})


def redirect_to(url: str, status: int = 302):
    return lambda request: Reply(status=status, headers={"Location": url}, body="")


def port_of(server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def test_a_redirect_to_another_host_is_refused_and_the_secret_stays_home(
        personas, home, elsewhere):
    # localhost:B is another origin than 127.0.0.1:A, as in the report that found the leak.
    home.handler = redirect_to(f"http://localhost:{port_of(elsewhere)}/search?q=shoes")
    model = secured_model(personas, f"{home.url}/search")

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert elsewhere.received == []
    assert result.status_code == 302 and not result.ok
    assert result.error.startswith(
        f"the endpoint redirected to another origin (http://localhost:{port_of(elsewhere)})")
    assert home.received[0].headers["x-api-key"] == SECRET


def test_an_allowed_cross_origin_redirect_carries_none_of_the_endpoints_headers(
        personas, home, elsewhere):
    home.handler = redirect_to(f"http://localhost:{port_of(elsewhere)}/search?q=shoes")
    model = secured_model(personas, f"{home.url}/search", allow_cross_origin_redirects=True)

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert result.ok, result.error
    [hop] = elsewhere.received
    assert "x-api-key" not in hop.headers and "x-tenant" not in hop.headers
    assert hop.headers["user-agent"].startswith("SearchTweak/")
    assert [doc.doc_id for doc in result.documents] == ["shoes-1", "shoes-2", "shoes-3"]


def test_a_same_origin_redirect_keeps_the_headers(personas, home):
    home.handler = lambda r: (redirect_to(f"{home.url}/moved?q=shoes", 307)(r)
                              if r.path == "/search" else Reply(body=hits(r.query["q"][0])))
    model = secured_model(personas, f"{home.url}/search")

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert result.ok, result.error
    assert [r.path for r in home.received] == ["/search", "/moved"]
    assert home.received[1].headers["x-api-key"] == SECRET
    assert home.received[1].headers["x-tenant"] == "acme"


def test_a_denied_network_is_refused_before_any_byte_is_sent(personas, home, settings):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.1/32"]
    model = secured_model(personas, f"{home.url}/search")

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert home.received == []
    assert result.error == ("refused to connect to 127.0.0.1: 127.0.0.1 is in a denied "
                            "network (127.0.0.1/32, OUTBOUND_DENY_NETWORKS)")


def test_a_hostname_that_resolves_into_a_denied_network_is_refused(personas, home, settings):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.1/32"]
    model = secured_model(personas, f"http://localhost:{port_of(home)}/search")

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert home.received == []
    assert result.error.startswith("refused to connect to localhost (127.0.0.1): 127.0.0.1 is "
                                   "in a denied network (127.0.0.1/32")


def test_a_redirect_hop_into_a_denied_network_is_refused(personas, home, settings):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.2/32"]
    with running_server("127.0.0.2") as denied:
        home.handler = redirect_to(f"{denied.url}/search?q=shoes")
        model = secured_model(personas, f"{home.url}/search", allow_cross_origin_redirects=True)

        result = endpoint_services.search_model_test(model=model, query="shoes")

        assert denied.received == []
    assert len(home.received) == 1
    assert result.error.startswith("refused to connect to 127.0.0.2: 127.0.0.2 is in a denied")


def test_an_allow_list_admits_only_its_networks(personas, home, settings):
    settings.OUTBOUND_ALLOW_NETWORKS = ["127.0.0.1/32"]
    with running_server("127.0.0.2") as outside:
        home.handler = redirect_to(f"{outside.url}/search?q=shoes")
        model = secured_model(personas, f"{home.url}/search", allow_cross_origin_redirects=True)

        result = endpoint_services.search_model_test(model=model, query="shoes")

        assert outside.received == []
    assert result.error == ("refused to connect to 127.0.0.2: 127.0.0.2 is outside the "
                            "allowed networks (OUTBOUND_ALLOW_NETWORKS)")


def test_fetching_refuses_a_denied_network_without_retrying(
        home, settings, django_capture_on_commit_callbacks):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.1/32"]
    evaluation = fetchable_evaluation(url=home.url, keywords=["shoes"])
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_start(evaluation=evaluation)

    shoes = Keyword.objects.get(evaluation=evaluation)
    assert home.received == []
    assert shoes.fetch_status == "failed"
    assert shoes.fetch_error.startswith("refused to connect to 127.0.0.1: ")
    assert "attempts" not in shoes.fetch_error
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE


def test_fetching_does_not_follow_a_cross_origin_redirect(
        home, elsewhere, django_capture_on_commit_callbacks):
    home.handler = redirect_to(f"http://localhost:{port_of(elsewhere)}/search?q=shoes", 301)
    evaluation = fetchable_evaluation(url=home.url, keywords=["shoes"])
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_start(evaluation=evaluation)

    shoes = Keyword.objects.get(evaluation=evaluation)
    assert elsewhere.received == []
    assert (shoes.fetch_status, shoes.fetch_status_code) == ("failed", 301)
    assert "another origin" in shoes.fetch_error


@pytest.fixture
def silent(home):
    """`home` answering nothing until the test ends (or `silent_release`)."""
    release = threading.Event()
    home.handler = lambda r: (release.wait(60), Reply(body=hits("late")))[1]
    home.release = release
    yield home
    release.set()


def silent_release(server) -> None:
    server.release.set()


def wait_until(condition, seconds: float = 10.0) -> None:
    give_up_at = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < give_up_at, "timed out"
        time.sleep(0.01)


def test_test_gives_up_at_its_deadline_below_the_web_timeout(personas, silent, settings):
    settings.OUTBOUND_TEST_DEADLINE_SECONDS = 0.5
    model = secured_model(personas, f"{silent.url}/search", timeout_seconds=120)

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert result.error == (
        "no complete answer within 0.5 s, the longest a test may take (the web server stops "
        f"a request at {settings.WEB_TIMEOUT_SECONDS} s, WEB_TIMEOUT); fetching waits up "
        "to the endpoint's own timeout of 120 s")


def test_a_trickling_answer_is_cut_at_the_tests_deadline(personas, home, settings):
    settings.OUTBOUND_TEST_DEADLINE_SECONDS = 0.5
    release = threading.Event()

    def trickle():
        yield b'{"hits": '
        release.wait(60)
        yield b"{}}"

    home.handler = lambda r: Reply(body=trickle())
    model = secured_model(personas, f"{home.url}/search", timeout_seconds=120)
    try:
        result = endpoint_services.search_model_test(model=model, query="shoes")
    finally:
        release.set()

    assert result.error.startswith("no complete answer within 0.5 s")


def test_a_huge_answer_to_a_test_is_cut_at_the_cap(personas, home, settings):
    settings.FETCH_MAX_RESPONSE_BYTES = 1024 * 1024
    home.handler = lambda r: Reply(body=(b"x" * 65536 for _ in range(800)))  # 50 MB, no length
    model = secured_model(personas, f"{home.url}/search")

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert result.error == "the response is larger than the 1 MB cap (FETCH_MAX_RESPONSE_BYTES)"
    assert result.raw == ""


def test_the_test_deadline_ends_before_gunicorn_kills_the_worker(settings):
    gunicorn = runpy.run_path(str(Path(__file__).resolve().parents[2] / "gunicorn.conf.py"))
    assert gunicorn["timeout"] == settings.WEB_TIMEOUT_SECONDS
    assert 0 < settings.OUTBOUND_TEST_DEADLINE_SECONDS < settings.WEB_TIMEOUT_SECONDS


def test_an_admin_sets_the_endpoints_limits_and_redirect_rule_through_the_api(personas):
    api = APIClient()
    api.force_authenticate(personas.admin)
    created = api.post("/api/v1/endpoints/", {
        "name": "Limited", "url": "https://search.test/s", "mapper": ES_MAPPER,
        "requests_per_minute": 600, "allow_cross_origin_redirects": True}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["max_concurrent_requests"], body["requests_per_minute"],
            body["allow_cross_origin_redirects"]) == (16, 600, True)

    changed = api.patch(f"/api/v1/endpoints/{body['id']}/", {
        "max_concurrent_requests": 2, "requests_per_minute": None}, format="json").json()
    assert (changed["max_concurrent_requests"], changed["requests_per_minute"],
            changed["allow_cross_origin_redirects"]) == (2, None, True)

    refused = api.patch(f"/api/v1/endpoints/{body['id']}/", {"max_concurrent_requests": 0},
                        format="json")
    assert refused.status_code == 400
    assert list(refused.json()) == ["max_concurrent_requests"]
    # Beyond a PostgreSQL integer, too: a 400, not a database error.
    refused = api.patch(f"/api/v1/endpoints/{body['id']}/", {"requests_per_minute": 2**40},
                        format="json")
    assert refused.status_code == 400
    assert list(refused.json()) == ["requests_per_minute"]


def test_the_endpoint_form_saves_the_limits_and_redirect_rule(client, personas):
    client.force_login(personas.admin)
    response = client.post("/endpoints/new/", {
        "name": "Shop", "url": "https://search.test/s", "method": "GET", "timeout_seconds": "5",
        "headers": "", "secret_headers": "", "preset": "", "mapper_documents": "hits.hits",
        "mapper_id": "_id", "mapper_name": "_source.title", "mapper_image": "",
        "mapper_fields": "", "max_concurrent_requests": "4", "requests_per_minute": "120",
        "allow_cross_origin_redirects": "on", "test-query": "", "test-params": "q=#query#"})
    assert response.status_code == 302
    endpoint = Endpoint.objects.get(name="Shop")
    assert (endpoint.max_concurrent_requests, endpoint.requests_per_minute,
            endpoint.allow_cross_origin_redirects) == (4, 120, True)


def test_a_claim_under_endpoint_limits_outlasts_the_waits_for_a_turn(settings):
    from evaluations.fetching.search_requests import (
        fetch_claim_lease_seconds,
        limits_make_requests_wait,
    )

    settings.OUTBOUND_LIMIT_WAIT_SECONDS = 300
    unlimited = fetch_claim_lease_seconds(5.0)
    assert fetch_claim_lease_seconds(5.0, limited=True) == \
        unlimited + (settings.FETCH_RETRIES + 1) * 300
    # The default (16 at once, as one worker sends) keeps the short lease of defect 1.
    assert not limits_make_requests_wait(max_concurrent_requests=16, requests_per_minute=None)
    assert limits_make_requests_wait(max_concurrent_requests=2, requests_per_minute=None)
    assert limits_make_requests_wait(max_concurrent_requests=None, requests_per_minute=60)


def test_a_redirect_to_the_same_host_on_another_port_is_another_origin(
        personas, home, elsewhere):
    home.handler = redirect_to(f"http://127.0.0.1:{port_of(elsewhere)}/search?q=shoes", 307)
    model = secured_model(personas, f"{home.url}/search")

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert elsewhere.received == []
    assert result.status_code == 307 and not result.ok
    assert result.error.startswith(
        f"the endpoint redirected to another origin (http://127.0.0.1:{port_of(elsewhere)})")


@pytest.fixture
def resolver(monkeypatch):
    """A stub of the system resolver for names under .test: `answers[name]` is a list of
    answers, one per lookup (the last repeats); every other name resolves as usual. The
    HTTP client and the policy are the real ones."""
    real = socket.getaddrinfo
    answers: dict[str, list[list[str]]] = {}
    lookups: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".test"):
            lookups.append(host)
            queue = answers[host]
            addresses = queue.pop(0) if len(queue) > 1 else queue[0]
            return [(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM,
                     socket.IPPROTO_TCP, "", (address, int(port))) for address in addresses]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    answers["lookups"] = lookups  # type: ignore[assignment]
    return answers


def test_a_name_with_an_allowed_and_a_denied_address_is_refused(
        personas, home, settings, resolver):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.2/32"]
    resolver["twin.test"] = [["127.0.0.1", "127.0.0.2"]]
    model = secured_model(personas, f"http://twin.test:{port_of(home)}/search")

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert home.received == []
    assert result.error == ("refused to connect to twin.test (127.0.0.2): 127.0.0.2 is in a "
                            "denied network (127.0.0.2/32, OUTBOUND_DENY_NETWORKS)")


def test_a_name_whose_answer_changes_after_the_check_reaches_only_the_checked_address(
        personas, home, settings, resolver):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.2/32"]
    # The first lookup (the check) says allowed; any later one says denied.
    resolver["rebind.test"] = [["127.0.0.1"], ["127.0.0.2"]]
    with running_server("127.0.0.2", port_of(home)) as denied:
        model = secured_model(personas, f"http://rebind.test:{port_of(home)}/search")

        result = endpoint_services.search_model_test(model=model, query="shoes")

        assert denied.received == []
    assert result.ok, result.error
    assert resolver["lookups"] == ["rebind.test"]
    [request] = home.received
    assert request.headers["host"] == f"rebind.test:{port_of(home)}"


@pytest.mark.parametrize("host", ["0.0.0.0", "[::]"])
def test_the_unspecified_address_does_not_get_around_a_loopback_deny(
        personas, home, settings, host):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.0/8", "::1/128"]
    model = secured_model(personas, f"http://{host}:{port_of(home)}/search")

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert home.received == []
    assert result.error.startswith(f"refused to connect to {host.strip('[]')}: ")
    assert "which is in a denied network" in result.error


# --- a team's Tests at once (OUTBOUND_TESTS_PER_TEAM) -----------------------------------


BUSY = ("This team already runs 2 Tests at once (OUTBOUND_TESTS_PER_TEAM), waiting for an "
        "engine or a judge to answer; try again when one has finished.")


def test_a_team_runs_at_most_its_cap_of_tests_against_a_hanging_engine(
        personas, silent, settings):
    settings.OUTBOUND_TESTS_PER_TEAM = 2
    settings.OUTBOUND_TESTS_SITE_WIDE = 4  # the team's cap is tried here, not the site's
    settings.OUTBOUND_TEST_DEADLINE_SECONDS = 30
    model = SearchModel.objects.select_related("endpoint").get(
        pk=secured_model(personas, f"{silent.url}/search").pk)
    with ThreadPoolExecutor(2) as pool:
        hanging = [pool.submit(endpoint_services.search_model_test, model=model, query="shoes")
                   for _ in range(2)]
        wait_until(lambda: len(silent.received) == 2)

        with pytest.raises(TestsBusy) as refused:
            endpoint_services.search_model_test(model=model, query="shoes")
        # Another team's Test is not held up by this team's.
        outsider_model = endpoint_services.search_model_create(
            team=personas.other_team, created_by=None, name="m", params={"q": "#query#"},
            endpoint=endpoint_services.endpoint_create(team=personas.other_team, created_by=None,
                                                       name="e", url=f"{silent.url}/other",
                                                       mapper=ES_MAPPER, timeout_seconds=0.2))
        other = endpoint_services.search_model_test(model=outsider_model, query="shoes")
        silent_release(silent)
        assert all(future.result(timeout=30).ok for future in hanging)

    assert refused.value.reason == BUSY
    assert len(silent.received) == 3  # two held and the other team's: the refused one sent none
    assert other.error == "no answer within the endpoint's timeout of 0.2 s"
    assert endpoint_services.search_model_test(model=model, query="shoes").ok  # turns given back


def test_the_model_test_page_and_api_answer_429_with_the_reason(client, personas, home,
                                                                settings):
    settings.OUTBOUND_TESTS_PER_TEAM = 2
    model = secured_model(personas, f"{home.url}/search")
    client.force_login(personas.lead)
    api = APIClient()
    api.force_authenticate(personas.lead)
    with outbound_limits.team_test_turn(team_id=personas.team.pk), \
            outbound_limits.team_test_turn(team_id=personas.team.pk):
        page = client.post(f"/models/{model.pk}/test/", {"query": "shoes"})
        answer = api.post(f"/api/v1/models/{model.pk}/test/", {"query": "shoes"}, format="json")
    assert page.status_code == 429
    assert escape(BUSY) in page.content.decode()
    assert (answer.status_code, answer.json()) == (429, {"detail": BUSY})
    assert home.received == []


def test_the_endpoint_forms_test_answers_429_with_the_reason(client, personas, home,
                                                              settings):
    settings.OUTBOUND_TESTS_PER_TEAM = 1
    client.force_login(personas.admin)
    form = {"name": "", "url": f"{home.url}/search", "method": "GET", "timeout_seconds": "5",
            "headers": "", "secret_headers": "", "preset": "", "mapper_documents": "hits.hits",
            "mapper_id": "_id", "mapper_name": "_source.title", "mapper_image": "",
            "mapper_fields": "", "max_concurrent_requests": "", "requests_per_minute": "",
            "test-query": "shoes", "test-params": "q=#query#", "test": "1"}
    with outbound_limits.team_test_turn(team_id=personas.team.pk):
        response = client.post("/endpoints/new/", form)
    assert response.status_code == 429
    assert "This team already runs 1 Test at once" in response.content.decode()
    assert home.received == []
    assert client.post("/endpoints/new/", form).status_code == 200
    assert len(home.received) == 1
