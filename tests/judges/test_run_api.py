"""The runs API: an evaluation's runs, starting one, a run with its progress, its actions
and failed pairs; 400s that name the field, access, and the OpenAPI schema."""

import json

import pytest
from rest_framework.test import APIClient

from judges.models import JudgeRun, JudgeRunItem
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, ModelAnswer, document_ids, fake_provider
from tests.judges.run_builders import call_of, judge_of, priced, run_of
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


@pytest.fixture
def evaluation(personas):
    return evaluation_with_slots(personas.team, keywords=2, positions=2)


@pytest.fixture
def run(personas, evaluation):
    judge = priced(judge_of(personas.team, name="Picky"), price_in="1", price_out="4")
    return run_of(judge, evaluation, started_by=personas.lead, pair_count=4, done_count=3,
                  failed_count=1, call_count=2, tokens_in=500_000, tokens_out=100_000)


def test_the_list_pages_an_evaluations_runs_newest_first(personas, evaluation, run):
    newer = run_of(judge_of(personas.team), evaluation, status=JudgeRun.Status.DONE)
    run_of(run.judge, evaluation_with_slots(personas.team))  # another evaluation's
    body = _api(personas.lead).get(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/").json()
    assert body["count"] == 2
    assert [row["id"] for row in body["results"]] == [newer.pk, run.pk]
    row = body["results"][1]
    assert {key: row[key] for key in ("judge", "judge_name", "evaluation", "mode", "status",
                                      "started_by", "done_count", "failed_count",
                                      "left_count")} == {
        "judge": run.judge_id, "judge_name": "Picky", "evaluation": evaluation.pk,
        "mode": "shadow", "status": "running", "started_by": "lead", "done_count": 3,
        "failed_count": 1, "left_count": 0}


def test_a_run_reads_with_its_progress_and_cost(personas, run):
    body = _api(personas.lead).get(f"/api/v1/judge-runs/{run.pk}/").json()
    assert body["id"] == run.pk and body["status"] == "running"
    progress = body["progress"]
    assert {key: progress[key] for key in ("pairs", "done", "failed", "left", "calls",
                                           "tokens_in", "tokens_out")} == {
        "pairs": 4, "done": 3, "failed": 1, "left": 0, "calls": 2, "tokens_in": 500_000,
        "tokens_out": 100_000}
    # 0.5M tokens in at 1 per million, 0.1M out at 4 per million.
    assert progress["cost"] == "0.9000"


def test_failed_pairs_list_keyword_document_failure_and_call(personas, evaluation, run):
    snapshot = evaluation.keywords.get(position=2).snapshots.get(position=1)
    call = call_of(run.judge, run=run)
    JudgeRunItem.objects.create(run=run, snapshot=snapshot, keyword=snapshot.keyword,
                                status=JudgeRunItem.Status.FAILED, failure="out_of_scale",
                                failure_detail="9 is not a grade of the scale", call=call)
    body = _api(personas.lead).get(f"/api/v1/judge-runs/{run.pk}/failed/").json()
    assert body["count"] == 1
    assert body["results"][0] == {
        "item": JudgeRunItem.objects.get().pk, "keyword": "query 2",
        "doc_id": snapshot.doc_id, "failure": "out_of_scale",
        "detail": "9 is not a grade of the scale", "call": call.pk}


@pytest.mark.parametrize(("body", "field"), [
    ({"mode": "shadow"}, "judge"),
    ({"judge": "x", "mode": "shadow"}, "judge"),
    ({"judge": 0, "mode": "shadow"}, "judge"),
    ({"judge": None, "mode": "sideways"}, "mode"),
    ({"judge": None, "mode": "shadow", "refresh_cache": "perhaps"}, "refresh_cache"),
])
def test_a_bad_start_names_the_field_and_starts_nothing(personas, evaluation, body, field):
    judge = judge_of(personas.team)
    if body.get("judge") is None and "judge" in body:
        body = {**body, "judge": judge.pk}
    response = _api(personas.lead).post(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
                                        body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not JudgeRun.objects.exists()


def test_a_judge_of_another_team_is_a_bad_judge_not_a_leak(personas, evaluation):
    foreign = judge_of(personas.other_team)
    response = _api(personas.lead).post(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
                                        {"judge": foreign.pk, "mode": "shadow"}, format="json")
    assert response.status_code == 400
    assert "judge" in response.json()


# --- access ------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), [
    ("get", "/api/v1/judge-runs/{run}/"),
    ("get", "/api/v1/judge-runs/{run}/failed/"),
    ("post", "/api/v1/judge-runs/{run}/pause/"),
    ("post", "/api/v1/judge-runs/{run}/resume/"),
    ("post", "/api/v1/judge-runs/{run}/cancel/"),
    ("post", "/api/v1/judge-runs/{run}/retry/"),
    ("get", "/api/v1/evaluations/{evaluation}/judge-runs/"),
    ("post", "/api/v1/evaluations/{evaluation}/judge-runs/"),
])
def test_graders_get_403_and_other_teams_404(personas, evaluation, run, method, path):
    url = path.format(run=run.pk, evaluation=evaluation.pk)
    assert getattr(_api(personas.grader), method)(url, {}, format="json").status_code == 403
    assert getattr(_api(personas.outsider), method)(url, {}, format="json").status_code == 404
    assert JudgeRun.objects.get(pk=run.pk).status == JudgeRun.Status.RUNNING


# --- the schema --------------------------------------------------------------------------


def test_every_runs_and_logs_operation_is_in_the_schema(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    assert set(paths["/api/v1/evaluations/{evaluation_id}/judge-runs/"]) >= {"get", "post"}
    for action in ("pause", "resume", "cancel", "retry"):
        assert "post" in paths[f"/api/v1/judge-runs/{{run_id}}/{action}/"]
    for path in ("/api/v1/judge-runs/{run_id}/", "/api/v1/judge-runs/{run_id}/failed/",
                 "/api/v1/judges/{judge_id}/calls/", "/api/v1/judges/{judge_id}/calls.jsonl"):
        assert "get" in paths[path]
    calls = paths["/api/v1/judges/{judge_id}/calls/"]["get"]
    assert {param["name"] for param in calls["parameters"]} >= {
        "run", "status", "is_test", "started_from", "started_to", "page"}
    jsonl = paths["/api/v1/judges/{judge_id}/calls.jsonl"]["get"]["responses"]["200"]
    assert "application/x-ndjson" in jsonl["content"]
    start = paths["/api/v1/evaluations/{evaluation_id}/judge-runs/"]["post"]
    assert set(start["responses"]) >= {"201", "400", "403", "404"}


# --- with the engine ---------------------------------------------------------------------


def _post(api, url: str, body=None, *, lanes, run_lanes: bool = True):
    """POST, running the lanes the request enqueued at commit (eager Celery) or not."""
    with lanes(execute=run_lanes):
        return api.post(url, body or {}, format="json")


def test_a_lead_starts_a_shadow_run_and_steers_it_through_the_api(
        personas, evaluation, django_capture_on_commit_callbacks):
    api = _api(personas.lead)
    runs_url = f"/api/v1/evaluations/{evaluation.pk}/judge-runs/"
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, counts=False)
        response = _post(api, runs_url, {"judge": judge.pk, "mode": "shadow"},
                         lanes=django_capture_on_commit_callbacks, run_lanes=False)
        assert response.status_code == 201
        body = response.json()
        run_url = f"/api/v1/judge-runs/{body['id']}/"
        assert (body["status"], body["refresh_cache"], body["progress"]["left"]) == (
            "running", False, 4)
        again = _post(api, runs_url, {"judge": judge.pk, "mode": "shadow"},
                      lanes=django_capture_on_commit_callbacks)
        assert again.status_code == 400 and "already has a run" in again.json()["judge"][0]

        paused = _post(api, f"{run_url}pause/", lanes=django_capture_on_commit_callbacks)
        assert (paused.status_code, paused.json()["status"]) == (200, "paused")
        resumed = _post(api, f"{run_url}resume/", lanes=django_capture_on_commit_callbacks)
        assert resumed.status_code == 200
        done = api.get(run_url).json()
        assert (done["status"], done["progress"]["done"], done["progress"]["calls"]) == (
            "done", 4, 2)
        refused = _post(api, f"{run_url}cancel/", lanes=django_capture_on_commit_callbacks)
        assert refused.status_code == 400 and "status" in refused.json()

        second = _post(api, runs_url, {"judge": judge.pk, "mode": "shadow",
                                       "refresh_cache": True},
                       lanes=django_capture_on_commit_callbacks, run_lanes=False).json()
        cancelled = _post(api, f"/api/v1/judge-runs/{second['id']}/cancel/",
                          lanes=django_capture_on_commit_callbacks)
        assert cancelled.json()["status"] == "cancelled"
    listed = api.get(runs_url).json()["results"]
    assert [(row["id"], row["status"]) for row in listed] == [
        (second["id"], "cancelled"), (body["id"], "done")]


def test_a_counting_mode_needs_a_judge_that_counts(personas, evaluation,
                                                   django_capture_on_commit_callbacks):
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, counts=False)
        response = _post(_api(personas.lead), f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
                         {"judge": judge.pk, "mode": "ungraded"},
                         lanes=django_capture_on_commit_callbacks)
    assert response.status_code == 400 and "mode" in response.json()
    assert not JudgeRun.objects.exists() and not provider.received


def test_failed_pairs_show_and_retry_puts_them_back(personas, evaluation,
                                                    django_capture_on_commit_callbacks):
    api = _api(personas.lead)
    with fake_provider(OPENAI) as provider:
        provider.then(lambda prompt, request: ModelAnswer({"grades": [
            {"id": doc_id, "grade": 2, "reason": "fits"}
            for doc_id in document_ids(prompt)[1:]]}))
        judge = judge_for(personas.team, provider, counts=False)
        run_id = _post(api, f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
                       {"judge": judge.pk, "mode": "shadow"},
                       lanes=django_capture_on_commit_callbacks).json()["id"]
        failed = api.get(f"/api/v1/judge-runs/{run_id}/failed/").json()["results"]
        assert [(row["keyword"], row["doc_id"], row["failure"]) for row in failed] == [
            ("query 1", "query 1-d1", "missing")]
        call = api.get(f"/api/v1/judges/{judge.pk}/calls/",
                       {"run": run_id}).json()["results"]
        assert failed[0]["call"] in {row["id"] for row in call}
        retried = _post(api, f"/api/v1/judge-runs/{run_id}/retry/",
                        lanes=django_capture_on_commit_callbacks).json()
    # The answer is written before the lanes start (at commit): back to running.
    assert (retried["retried"], retried["status"], retried["progress"]["failed"]) == (
        1, "running", 0)
    after = api.get(f"/api/v1/judge-runs/{run_id}/").json()
    assert (after["status"], after["progress"]["done"]) == ("done", 4)
    assert api.get(f"/api/v1/judge-runs/{run_id}/failed/").json()["count"] == 0


def test_the_logged_calls_of_a_real_run_hold_no_api_key(personas, evaluation,
                                                        django_capture_on_commit_callbacks):
    api = _api(personas.lead)
    with fake_provider(OPENAI, api_key="sk-live-very-secret-key-42") as provider:
        judge = judge_for(personas.team, provider, counts=False)
        _post(api, f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
              {"judge": judge.pk, "mode": "shadow"}, lanes=django_capture_on_commit_callbacks)
    assert provider.received[0].headers["authorization"] == "Bearer sk-live-very-secret-key-42"
    response = api.get(f"/api/v1/judges/{judge.pk}/calls.jsonl")
    text = b"".join(response.streaming_content).decode()
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 2 and all(line["status"] == "ok" for line in lines)
    assert "sk-live-very-secret-key-42" not in text
    assert lines[0]["request"]["headers"]["authorization"] == "Bearer [redacted]"
