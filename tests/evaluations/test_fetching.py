"""Fetching keywords' results from a real HTTP server on 127.0.0.1 into snapshots."""

import json
import threading

import pytest

from evaluations.endpoints import services as endpoint_services
from evaluations.fetching import services as fetch_services
from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.services import lifecycle
from evaluations.signals import snapshots_created
from tests.evaluations.factories import ES_MAPPER, fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.FETCH_RETRY_BACKOFF_MS = 5


@pytest.fixture
def server():
    with running_server() as server:
        yield server


@pytest.fixture
def announced():
    calls = []

    def receiver(sender, evaluation, snapshots_by_keyword, **kwargs):
        for keyword, snapshots in snapshots_by_keyword.items():
            calls.append((keyword.text, [s.pk for s in snapshots],
                          [s.position for s in snapshots]))

    snapshots_created.connect(receiver, dispatch_uid="test-announced")
    yield calls
    snapshots_created.disconnect(dispatch_uid="test-announced")


def start(evaluation, capture) -> Evaluation:
    with capture(execute=True):
        lifecycle.evaluation_start(evaluation=evaluation)
    evaluation.refresh_from_db()
    return evaluation


def keyword(evaluation, text) -> Keyword:
    return Keyword.objects.get(evaluation=evaluation, text=text)


def test_it_stores_each_keywords_results_as_snapshots_and_announces_them(
        server, announced, django_capture_on_commit_callbacks):
    evaluation = fetchable_evaluation(url=server.url, keywords=["red shoes", "blue hat"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)

    assert evaluation.status == Evaluation.Status.ACTIVE
    red = keyword(evaluation, "red shoes")
    assert (red.fetch_status, red.fetch_status_code, red.fetch_error) == ("fetched", 200, "")
    assert red.fetch_duration_ms is not None and red.fetched_at is not None
    assert list(red.snapshots.values_list("position", "doc_id", "name", "fields")) == [
        (1, "red shoes-1", "red shoes result 1", {"Rank": 1}),
        (2, "red shoes-2", "red shoes result 2", {"Rank": 2}),
        (3, "red shoes-3", "red shoes result 3", {"Rank": 3}),
    ]
    assert sorted(server.queries()) == ["blue hat", "red shoes"]
    by_text = {text: (pks, positions) for text, pks, positions in announced}
    assert by_text["red shoes"] == (list(red.snapshots.values_list("pk", flat=True)), [1, 2, 3])
    assert len(announced) == 2


def test_it_keeps_only_as_many_results_as_the_deepest_metric_reads(
        server, django_capture_on_commit_callbacks):
    server.handler = lambda r: Reply(body=hits(r.query["q"][0], count=30))
    evaluation = fetchable_evaluation(url=server.url, keywords=["lamp"], k=5)
    start(evaluation, django_capture_on_commit_callbacks)
    assert Snapshot.objects.filter(keyword__evaluation=evaluation).count() == 5


def test_a_slow_endpoint_times_out_and_the_keyword_shows_why(
        server, django_capture_on_commit_callbacks):
    # "slow" gets no answer until the test has looked (not a delay that a busy machine
    # could outrun); the timeout leaves "fast" ample time however loaded the machine.
    released = threading.Event()

    def answer(request):
        if request.query["q"][0] == "slow":
            released.wait(timeout=60)
        return Reply(body=hits(request.query["q"][0]))

    server.handler = answer
    evaluation = fetchable_evaluation(url=server.url, keywords=["slow", "fast"],
                                      timeout_seconds=2)
    try:
        evaluation = start(evaluation, django_capture_on_commit_callbacks)
    finally:
        released.set()

    slow = keyword(evaluation, "slow")
    assert slow.fetch_status == "failed"
    assert slow.fetch_error == "no answer within the endpoint's timeout of 2 s"
    assert not slow.snapshots.exists()
    assert server.queries().count("slow") == 1  # a read timeout is not retried
    assert keyword(evaluation, "fast").fetch_status == "fetched"
    assert evaluation.status == Evaluation.Status.ACTIVE


def test_a_server_error_is_retried_until_it_answers(server, django_capture_on_commit_callbacks):
    answers = iter([Reply(status=500, body={"error": "boom"}), Reply(status=502, body="bad"),
                    None])
    server.handler = lambda r: next(answers) or Reply(body=hits("flaky"))
    evaluation = fetchable_evaluation(url=server.url, keywords=["flaky"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)

    flaky = keyword(evaluation, "flaky")
    assert (flaky.fetch_status, flaky.fetch_status_code) == ("fetched", 200)
    assert flaky.snapshots.count() == 3
    assert server.queries() == ["flaky"] * 3


def test_a_server_that_keeps_failing_is_given_up_after_three_retries(
        server, django_capture_on_commit_callbacks):
    server.handler = lambda r: Reply(status=503, body={"error": "down"})
    evaluation = fetchable_evaluation(url=server.url, keywords=["down"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    down = keyword(evaluation, "down")
    assert (down.fetch_status, down.fetch_status_code) == ("failed", 503)
    assert down.fetch_error == "HTTP 503 from the endpoint (after 4 attempts)"
    assert len(server.received) == 4


def test_a_client_error_is_not_retried(server, django_capture_on_commit_callbacks):
    server.handler = lambda r: Reply(status=404, body={"error": "no such index"})
    evaluation = fetchable_evaluation(url=server.url, keywords=["missing"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    missing = keyword(evaluation, "missing")
    assert (missing.fetch_status, missing.fetch_status_code) == ("failed", 404)
    assert missing.fetch_error == "HTTP 404 from the endpoint (not retried)"
    assert len(server.received) == 1


def test_invalid_json_is_a_readable_error(server, django_capture_on_commit_callbacks):
    server.handler = lambda r: Reply(body="<html>Service Unavailable</html>",
                                     headers={"Content-Type": "text/html"})
    evaluation = fetchable_evaluation(url=server.url, keywords=["html"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    html = keyword(evaluation, "html")
    assert html.fetch_status == "failed"
    assert html.fetch_error.startswith("the response is not valid JSON: Expecting value")
    assert not html.snapshots.exists()


def test_a_mapper_that_finds_nothing_names_the_mapper_field(
        server, django_capture_on_commit_callbacks):
    server.handler = lambda r: Reply(body={"results": []})
    evaluation = fetchable_evaluation(url=server.url, keywords=["nothing"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    nothing = keyword(evaluation, "nothing")
    assert nothing.fetch_status == "failed"
    assert nothing.fetch_error == "mapper.documents: 'hits.hits' found nothing in the response"


def test_an_empty_result_list_is_a_fetched_keyword_without_snapshots(
        server, django_capture_on_commit_callbacks):
    server.handler = lambda r: Reply(body={"hits": {"hits": []}})
    evaluation = fetchable_evaluation(url=server.url, keywords=["zero results"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    assert keyword(evaluation, "zero results").fetch_status == "fetched"
    assert not Snapshot.objects.filter(keyword__evaluation=evaluation).exists()


def test_numeric_ids_are_stored_as_text(server, django_capture_on_commit_callbacks):
    server.handler = lambda r: Reply(body=[{"id": 7, "name": "seven"}, {"id": 2.0, "name": 3},
                                           {"id": "x9", "name": None}])
    mapper = {"documents": "@", "id": "id", "name": "name", "image": None, "fields": {}}
    evaluation = fetchable_evaluation(url=server.url, keywords=["ids"], mapper=mapper)
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    assert list(keyword(evaluation, "ids").snapshots.values_list("doc_id", "name")) == [
        ("7", "seven"), ("2", "3"), ("x9", "")]


def test_a_document_without_an_id_fails_the_whole_keyword(
        server, django_capture_on_commit_callbacks):
    server.handler = lambda r: Reply(body=[{"id": 1}, {"id": 2}, {"id": {"nested": 3}}])
    mapper = {"documents": "@", "id": "id", "name": "name", "image": None, "fields": {}}
    evaluation = fetchable_evaluation(url=server.url, keywords=["bad id"], mapper=mapper)
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    bad = keyword(evaluation, "bad id")
    assert bad.fetch_status == "failed"
    assert bad.fetch_error == ("mapper.id: 'id' found no id (a string or a number) in "
                               "document 3")
    assert not bad.snapshots.exists()  # nothing half-written


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_a_50_mb_body_is_cut_at_the_cap(server, declared, django_capture_on_commit_callbacks):
    chunk = b"[" + b"0," * (1024 * 512 - 1)
    size = 50 * 1024 * 1024
    if declared:
        body = b"[" + b" " * (size - 2) + b"]"
        server.handler = lambda r: Reply(body=body)
    else:
        server.handler = lambda r: Reply(body=(chunk for _ in range(size // len(chunk))))
    evaluation = fetchable_evaluation(url=server.url, keywords=["huge"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    huge = keyword(evaluation, "huge")
    assert huge.fetch_status == "failed"
    assert huge.fetch_error == ("the response is larger than the 10 MB cap "
                                "(FETCH_MAX_RESPONSE_BYTES)")


def test_unicode_keywords_reach_the_engine_intact(server, django_capture_on_commit_callbacks):
    words = ["café crème", "東京 ラーメン", "naïve & bold +1 %20"]
    evaluation = fetchable_evaluation(url=server.url, keywords=words)
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    assert sorted(server.queries()) == sorted(words)
    assert keyword(evaluation, "東京 ラーメン").snapshots.first().doc_id == "東京 ラーメン-1"


def test_query_in_a_json_body_is_escaped(server, django_capture_on_commit_callbacks):
    text = 'he said "hi" \\ then\ttabbed'
    seen = []

    def handler(request):
        payload = json.loads(request.body)
        seen.append((request.method, request.headers["content-type"], payload))
        return Reply(body=hits("body"))

    server.handler = handler
    evaluation = fetchable_evaluation(
        url=server.url, keywords=[text], method="POST", params={},
        body='{"query": {"match": {"title": "#query#"}}, "size": 10}')
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    assert seen == [("POST", "application/json",
                     {"query": {"match": {"title": text}}, "size": 10})]
    assert keyword(evaluation, text).fetch_status == "fetched"


def test_query_in_a_form_body_and_in_the_url_path_is_escaped(
        server, django_capture_on_commit_callbacks):
    seen = []

    def handler(request):
        seen.append((request.path, request.body))
        return Reply(body=hits("x"))

    server.handler = handler
    evaluation = fetchable_evaluation(url=server.url, keywords=["a&b=c/d é"], method="PUT",
                                      params={}, body="q=#query#&rows=10")
    endpoint = evaluation.model.endpoint
    endpoint.url = f"{server.url}/search/#query#"
    endpoint.save(update_fields=["url"])
    evaluation.model.body_format = "form"
    evaluation.model.save(update_fields=["body_format"])
    start(evaluation, django_capture_on_commit_callbacks)
    assert seen == [("/search/a%26b%3Dc%2Fd%20%C3%A9", b"q=a%26b%3Dc%2Fd+%C3%A9&rows=10")]


def test_an_unreachable_endpoint_is_retried_then_recorded(django_capture_on_commit_callbacks):
    with running_server() as server:
        url = server.url  # a port nothing listens on once the server is gone
    evaluation = fetchable_evaluation(url=url, keywords=["offline"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    offline = keyword(evaluation, "offline")
    assert offline.fetch_status == "failed"
    assert offline.fetch_error.startswith("request failed: ConnectError")
    assert offline.fetch_error.endswith("(after 4 attempts)")


def test_a_failed_keyword_is_refetched_on_the_next_start_without_duplicates(
        server, announced, django_capture_on_commit_callbacks):
    healthy = threading.Event()
    server.handler = lambda r: Reply(body=hits(r.query["q"][0])) if healthy.is_set() or \
        r.query["q"][0] != "flaky" else Reply(status=500)
    evaluation = fetchable_evaluation(url=server.url, keywords=["steady", "flaky"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)
    assert keyword(evaluation, "flaky").fetch_status == "failed"
    assert evaluation.status == Evaluation.Status.ACTIVE

    lifecycle.evaluation_pause(evaluation=evaluation)
    healthy.set()
    server.received.clear()
    evaluation = start(evaluation, django_capture_on_commit_callbacks)

    assert server.queries() == ["flaky"]  # the fetched keyword is not asked again
    flaky = keyword(evaluation, "flaky")
    assert (flaky.fetch_status, flaky.fetch_error) == ("fetched", "")
    assert list(flaky.snapshots.values_list("position", flat=True)) == [1, 2, 3]
    assert keyword(evaluation, "steady").snapshots.count() == 3
    assert sorted(text for text, _, _ in announced) == ["flaky", "steady"]


def test_a_task_for_a_paused_evaluation_fetches_nothing(server):
    evaluation = fetchable_evaluation(url=server.url, keywords=["a", "b"])
    lifecycle.evaluation_start(evaluation=evaluation)  # on-commit enqueue never runs here
    lifecycle.evaluation_pause(evaluation=evaluation)
    ids = list(evaluation.keywords.values_list("pk", flat=True))
    assert fetch_services.keywords_fetch(evaluation_id=evaluation.pk, keyword_ids=ids) == 0
    assert server.received == []
    assert set(evaluation.keywords.values_list("fetch_status", flat=True)) == {"pending"}


def test_a_duplicated_task_fetches_each_keyword_once(server):
    evaluation = fetchable_evaluation(url=server.url, keywords=["a", "b"])
    lifecycle.evaluation_start(evaluation=evaluation)
    ids = list(evaluation.keywords.values_list("pk", flat=True))
    assert fetch_services.keywords_fetch(evaluation_id=evaluation.pk, keyword_ids=ids) == 2
    assert fetch_services.keywords_fetch(evaluation_id=evaluation.pk, keyword_ids=ids) == 0
    assert len(server.received) == 2
    assert Snapshot.objects.filter(keyword__evaluation=evaluation).count() == 6


def test_secret_headers_are_sent_but_stored_encrypted(server, django_capture_on_commit_callbacks,
                                                      personas):
    endpoint = endpoint_services.endpoint_create(
        team=personas.team, created_by=personas.admin, name="Secure", url=f"{server.url}/s",
        mapper={"documents": "hits.hits", "id": "_id", "name": "_source.title"},
        headers={"Authorization": "Bearer sk-live-1234567890abcd", "X-Tenant": "acme"},
    )
    assert "sk-live" not in endpoint.secret_headers_encrypted
    assert endpoint.headers == {"X-Tenant": "acme"}
    model = endpoint_services.search_model_create(
        team=personas.team, created_by=personas.admin,
        endpoint=endpoint, name="m", params={"q": "#query#"})
    result = endpoint_services.search_model_test(model=model, query="shoes")
    assert result.ok
    assert server.received[0].headers["authorization"] == "Bearer sk-live-1234567890abcd"
    assert server.received[0].headers["x-tenant"] == "acme"


def test_the_urls_own_query_reaches_the_engine_with_the_keyword_in_it(
        server, django_capture_on_commit_callbacks):
    # No model params: httpx's params= used to replace the URL's query with nothing.
    evaluation = fetchable_evaluation(url=server.url, keywords=["red shoes", "a&b"], params={})
    endpoint = evaluation.model.endpoint
    endpoint.url = f"{server.url}/search?q=#query#&n=3"
    endpoint.save(update_fields=["url"])
    start(evaluation, django_capture_on_commit_callbacks)

    assert sorted((r.path, r.query["q"], r.query["n"]) for r in server.received) == [
        ("/search", ["a&b"], ["3"]), ("/search", ["red shoes"], ["3"])]
    assert keyword(evaluation, "a&b").fetch_status == "fetched"


def test_a_models_params_join_the_urls_query_instead_of_replacing_it(personas, server):
    endpoint = endpoint_services.endpoint_create(
        team=personas.team, created_by=personas.admin, name="Versioned",
        url=f"{server.url}/search?n=3&api-version=2024", mapper=ES_MAPPER)
    model = endpoint_services.search_model_create(team=personas.team, created_by=personas.admin,
                                                  endpoint=endpoint, name="m",
                                                  params={"q": "#query#", "tag": ["a b", "c"]})

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert result.ok, result.error
    assert server.received[0].query == {"n": ["3"], "api-version": ["2024"], "q": ["shoes"],
                                        "tag": ["a b", "c"]}


def test_the_endpoint_forms_test_sends_the_urls_query_too(personas, server):
    result = endpoint_services.endpoint_test(
        team=personas.team, query="red shoes", params={},
        url=f"{server.url}/search?q=#query#&n=3", mapper=ES_MAPPER)

    assert result.ok, result.error
    assert server.received[0].query == {"q": ["red shoes"], "n": ["3"]}


DEEP = b"[" * 100_000 + b"]" * 100_000


def test_a_test_against_an_engine_answering_100k_deep_json_fails_with_the_reason(
        personas, server):
    server.handler = lambda r: Reply(body=DEEP)
    endpoint = endpoint_services.endpoint_create(
        team=personas.team, created_by=personas.admin,
        name="Deep", url=f"{server.url}/s", mapper=ES_MAPPER)
    model = endpoint_services.search_model_create(
        team=personas.team, created_by=personas.admin,
        endpoint=endpoint, name="m", params={"q": "#query#"})

    result = endpoint_services.search_model_test(model=model, query="shoes")

    assert not result.ok
    assert result.error == ("the response is nested too deeply to read (arrays or objects "
                            "inside each other)")


def test_a_deep_field_just_under_the_parsers_limit_fails_the_test_not_the_page(
        client, personas, server):
    deep_field = "[" * 950 + "]" * 950
    server.handler = lambda r: Reply(body=(
        '{"hits": {"hits": [{"_id": "1", "_source": {"title": "t", "rank": ' + deep_field
        + "}}]}}").encode())
    endpoint = endpoint_services.endpoint_create(
        team=personas.team, created_by=personas.admin,
        name="Deep", url=f"{server.url}/s", mapper=ES_MAPPER)
    model = endpoint_services.search_model_create(
        team=personas.team, created_by=personas.admin,
        endpoint=endpoint, name="m", params={"q": "#query#"})
    client.force_login(personas.admin)

    response = client.post(f"/models/{model.pk}/test/", {"query": "shoes"})

    assert response.status_code == 200
    assert "nested too deeply" in response.content.decode()


def test_fetching_records_a_deep_answer_as_that_keywords_failure(
        server, django_capture_on_commit_callbacks):
    server.handler = lambda r: Reply(body=DEEP) if r.query["q"][0] == "deep" else \
        Reply(body=hits(r.query["q"][0]))
    evaluation = fetchable_evaluation(url=server.url, keywords=["deep", "fine"])
    evaluation = start(evaluation, django_capture_on_commit_callbacks)

    deep = keyword(evaluation, "deep")
    assert (deep.fetch_status, deep.fetch_error) == (
        "failed", "the response is nested too deeply to read (arrays or objects inside each "
        "other)")
    assert keyword(evaluation, "fine").snapshots.count() == 3
    assert evaluation.status == Evaluation.Status.ACTIVE
