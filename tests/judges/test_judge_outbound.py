"""A judge's calls meet the outbound rules as fetching does (searchtweak.outbound): the
network policy on the address really reached, redirects followed only to the same origin
(another origin only when the judge allows it, and then without its key), a size cap on
the answer, and an answer nested too deep to parse is one failure of its batch, never a
crash. Every server here is a real one on 127.0.0.x."""

import json

import pytest
from rest_framework.test import APIClient

from judges import calls, runs
from judges.core.answers import Rejected, Rejection, Verdict
from judges.core.prompts import Document
from judges.core.sending import MAX_RESPONSE_BYTES
from judges.models import Judge, JudgeCall, JudgeRun, JudgeRunItem
from judgments import scales as scale_lookup
from tests.evaluations.servers import Reply, running_server
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, fake_provider
from tests.judgments.builders import evaluation_with_slots

KEY = "sk-test-secret-0123456789"
DOCUMENTS = [Document(id="a", fields={"title": "Office chair"}),
             Document(id="b", fields={"title": "Desk"})]


@pytest.fixture(autouse=True)
def _quick_retries(settings):
    settings.JUDGE_RETRY_BACKOFF_MS = 5


def ask(judge, **options) -> calls.AskResult:
    scale = scale_lookup.scale_for_team(team_id=judge.team_id, code="binary").scale
    return calls.ask(judge=judge, keyword="chair", guidelines="", scale=scale,
                     documents=DOCUMENTS, **options)


def port_of(server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def moved_to(url: str, status: int = 307):
    return Reply(status=status, headers={"Location": url}, body="")


def deep_json(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.django_db
def test_a_denied_network_is_refused_once_and_logged(personas, settings):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.1/32"]
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, max_retries=2)
        result = ask(judge)
        assert provider.received == []
    assert result.error_kind == "refused"
    assert result.error == ("refused to connect to 127.0.0.1: 127.0.0.1 is in a denied "
                            "network (127.0.0.1/32, OUTBOUND_DENY_NETWORKS)")
    # Refused by the rules: asking again would be refused again, so one attempt.
    assert list(JudgeCall.objects.values_list("status", "error")) == [
        ("refused", result.error)]


@pytest.mark.django_db
def test_an_allow_list_that_leaves_out_the_provider_refuses_it(personas, settings):
    settings.OUTBOUND_ALLOW_NETWORKS = ["10.0.0.0/8"]
    with fake_provider(OPENAI) as provider:
        result = ask(judge_for(personas.team, provider))
        assert provider.received == []
    assert "outside the allowed networks" in result.error


@pytest.mark.django_db
def test_a_same_origin_redirect_is_followed_with_the_key(personas):
    with fake_provider(OPENAI) as provider:
        serve = provider.server.handler
        provider.server.handler = lambda request: moved_to(
            f"{provider.server.url}/v1/chat/completions") \
            if request.path == "/old/chat/completions" else serve(request)
        judge = judge_for(personas.team, provider, base_url=f"{provider.server.url}/old")
        result = ask(judge)
        paths = [request.path for request in provider.received]
        hop = provider.received[1]
    assert result.ok, result.error
    assert paths == ["/old/chat/completions", "/v1/chat/completions"]
    assert hop.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(hop.body)["model"] == "fake-model"  # 307 keeps the POST and its body


@pytest.mark.django_db
def test_a_cross_origin_redirect_is_refused_and_the_key_stays_home(personas):
    with running_server() as elsewhere, fake_provider(OPENAI) as provider:
        provider.server.handler = lambda request: moved_to(
            f"http://localhost:{port_of(elsewhere)}/v1/chat/completions")
        result = ask(judge_for(personas.team, provider))
        assert elsewhere.received == []
    assert result.error_kind == "refused"
    assert result.error.startswith(
        f"the provider redirected to another origin (http://localhost:{port_of(elsewhere)})")
    assert "allow cross-origin redirects on the judge" in result.error
    assert JudgeCall.objects.get().status == "refused"


@pytest.mark.django_db
def test_an_allowed_cross_origin_redirect_carries_no_key(personas):
    with fake_provider(OPENAI, api_key=None) as elsewhere, \
            fake_provider(OPENAI) as provider:
        provider.server.handler = lambda request: moved_to(
            f"http://localhost:{port_of(elsewhere.server)}/v1/chat/completions")
        judge = judge_for(personas.team, provider, allow_cross_origin_redirects=True)
        result = ask(judge)
        [hop] = elsewhere.received
    assert result.ok, result.error
    assert "authorization" not in hop.headers
    assert hop.headers["user-agent"].startswith("SearchTweak/")
    assert [accepted.id for accepted in result.verdict.accepted] == ["a", "b"]


@pytest.mark.django_db
def test_a_redirect_into_a_denied_network_is_refused(personas, settings):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.2/32"]
    with running_server("127.0.0.2") as denied, fake_provider(OPENAI) as provider:
        provider.server.handler = lambda request: moved_to(f"{denied.url}/v1/chat/completions")
        result = ask(judge_for(personas.team, provider, allow_cross_origin_redirects=True))
        assert denied.received == []
    assert result.error.startswith("refused to connect to 127.0.0.2: 127.0.0.2 is in a denied")


@pytest.mark.django_db
def test_an_answer_over_the_size_cap_is_cut_and_logged(personas):
    chunk = b" " * 65536
    with fake_provider(OPENAI) as provider:
        provider.server.handler = lambda request: Reply(
            body=(chunk for _ in range(MAX_RESPONSE_BYTES // len(chunk) + 2)))
        result = ask(judge_for(personas.team, provider, max_retries=0))
    assert result.error == "the answer is larger than 4 MB"
    assert JudgeCall.objects.get().status == "http_error"


# --- an answer nested 100k deep ---


@pytest.mark.django_db
@pytest.mark.parametrize("where", ["body", "content"])
def test_a_deeply_nested_answer_is_a_failed_call_not_a_crash(personas, where):
    with fake_provider(OPENAI) as provider:
        provider.server.handler = lambda request: Reply(body=deep_json()) if where == "body" \
            else Reply(body={"choices": [{"message": {"content": deep_json()}}]})
        judge = judge_for(personas.team, provider, max_retries=2)
        result = ask(judge)
        assert len(provider.received) == 1  # an unreadable answer is not asked again
    if where == "body":
        # The provider's own JSON cannot be read: no verdict, the call failed.
        assert (result.error_kind, result.error, result.verdict) == (
            "malformed", "the provider's answer nests its JSON too deeply to read", None)
    else:
        # The provider answered; the model's text is what cannot be read: every pair of
        # the batch is rejected with the reason, none accepted.
        assert (result.error_kind, result.error) == ("", "")
        assert result.verdict == Verdict((), tuple(
            Rejected(doc_id, Rejection.MALFORMED, "the answer nests its JSON too deeply to read")
            for doc_id in ("a", "b")))
    assert JudgeCall.objects.get().status == "malformed"


@pytest.mark.django_db
def test_test_of_a_deeply_nested_answer_is_a_200_with_the_reason(personas):
    with fake_provider(OPENAI) as provider:
        provider.server.handler = lambda request: Reply(body=deep_json())
        judge = judge_for(personas.team, provider)
        client = APIClient()
        client.force_authenticate(personas.admin)
        response = client.post(f"/api/v1/judges/{judge.pk}/test/", {
            "keyword": "chair", "scale": "binary",
            "documents": [{"id": "a", "fields": {"title": "Office chair"}}]}, format="json")
    assert response.status_code == 200
    assert response.json()["error"] == (
        "the provider's answer nests its JSON too deeply to read")


@pytest.mark.django_db(transaction=True)
def test_a_run_against_deep_json_fails_every_pair_once_per_batch_and_stops(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3)
    with fake_provider(OPENAI) as provider:
        provider.server.handler = lambda request: Reply(body=deep_json())
        judge = judge_for(personas.team, provider, batch_size=3, max_retries=2)
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.SHADOW,
                             started_by=None)
        asked = len(provider.received)
    run.refresh_from_db()
    assert (run.status, run.failed_count, run.done_count, run.crash_count) == ("done", 6, 0, 0)
    assert asked == 2 and run.call_count == 2
    assert list(JudgeCall.objects.filter(run=run).values_list("status", flat=True)) == [
        "malformed", "malformed"]
    assert set(JudgeRunItem.objects.filter(run=run).values_list("failure", "failure_detail")) \
        == {("malformed", "the provider's answer nests its JSON too deeply to read")}
    assert all(item.call_id for item in JudgeRunItem.objects.filter(run=run))


@pytest.mark.django_db
def test_an_admin_allows_cross_origin_redirects_through_the_api(personas):
    client = APIClient()
    client.force_authenticate(personas.admin)
    created = client.post("/api/v1/judges/", {
        "name": "Roamer", "provider": "openai", "model": "m",
        "allow_cross_origin_redirects": True}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["allow_cross_origin_redirects"] is True
    judge = Judge.objects.get()
    assert judge.allow_cross_origin_redirects is True
    changed = client.patch(f"/api/v1/judges/{judge.pk}/",
                           {"allow_cross_origin_redirects": False}, format="json")
    assert changed.json()["allow_cross_origin_redirects"] is False
    assert Judge.objects.get().allow_cross_origin_redirects is False
