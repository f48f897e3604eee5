"""Runs started, steered and retried through the pages against a fake OpenAI-compatible
provider; the lanes run where Celery runs them in tests: eagerly, at commit."""

import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from evaluations.models import Evaluation
from judges.models import JudgeRun, JudgeRunItem
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, ModelAnswer, document_ids, fake_provider
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def evaluation(personas):
    return evaluation_with_slots(personas.team, keywords=2, positions=2)



def all_but_last(prompt: str, request) -> ModelAnswer:
    """A model that forgets the last document of its batch."""
    return ModelAnswer({"grades": [{"id": doc_id, "grade": 1, "reason": "fits"}
                                   for doc_id in document_ids(prompt)[:-1]]})


def _post(client, name: str, pk: int, data=None, *, lanes, run_lanes: bool = True):
    """POST, running the lanes the request enqueued at commit (eager Celery) or not."""
    with lanes(execute=run_lanes):
        return client.post(reverse(name, args=[pk]), data or {})


def test_a_lead_starts_a_shadow_run_from_the_panel_and_sees_it_done(
        client, personas, evaluation, django_capture_on_commit_callbacks):
    client.force_login(personas.lead)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, counts=False)
        response = _post(client, "judges:run_start", evaluation.pk,
                         {"judge": judge.pk, "mode": "shadow"},
                         lanes=django_capture_on_commit_callbacks)
    run = JudgeRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("judges:run_detail", args=[run.pk])
    assert (run.mode, run.status, run.started_by, run.refresh_cache) == (
        "shadow", "done", personas.lead, False)
    # 2 keywords of 2 results, batch 5, one keyword a call.
    assert len(provider.received) == 2
    page = client.get(response["Location"])
    html = page.content.decode()
    figures = dict(re.findall(r'<dd data-field="(\w+)">([^<]*)', html))
    assert (figures["pairs"].strip(), figures["done"].strip(), figures["failed"].strip(),
            figures["left"].strip(), figures["calls"].strip()) == ("4", "4", "0", "0", "2")
    assert 'data-status="done"' in html and "hx-trigger" not in html
    panel = client.get(reverse("judges:evaluation_runs", args=[evaluation.pk]), **HTMX)
    assert list(panel.context["runs"]) == [run]


def test_the_engines_refusal_shows_on_the_form(client, personas, evaluation,
                                               django_capture_on_commit_callbacks):
    client.force_login(personas.lead)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, counts=False)
        response = _post(client, "judges:run_start", evaluation.pk,
                         {"judge": judge.pk, "mode": "fill"},
                         lanes=django_capture_on_commit_callbacks)
    assert response.status_code == 400
    assert "does not count yet" in response.context["form"].errors["mode"][0]
    assert not JudgeRun.objects.exists() and not provider.received
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.PENDING)
    response = _post(client, "judges:run_start", evaluation.pk,
                     {"judge": judge.pk, "mode": "shadow"},
                     lanes=django_capture_on_commit_callbacks)
    assert response.status_code == 400
    assert "Judges grade only running evaluations" in response.content.decode()


def test_pause_resume_and_cancel_move_a_run_and_refuse_what_its_status_forbids(
        client, personas, evaluation, django_capture_on_commit_callbacks):
    client.force_login(personas.lead)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, counts=False)
        # Started, but its lanes not run yet: it is running with every pair left.
        _post(client, "judges:run_start", evaluation.pk, {"judge": judge.pk, "mode": "shadow"},
              lanes=django_capture_on_commit_callbacks, run_lanes=False)
        run = JudgeRun.objects.get()
        html = client.get(reverse("judges:run_detail", args=[run.pk])).content.decode()
        assert 'hx-trigger="every 2s"' in html and "<dd data-field=\"left\">4" in html

        response = _post(client, "judges:run_pause", run.pk,
                         lanes=django_capture_on_commit_callbacks)
        assert response["Location"] == reverse("judges:run_detail", args=[run.pk])
        run.refresh_from_db()
        assert run.status == "paused"
        _post(client, "judges:run_resume", run.pk, lanes=django_capture_on_commit_callbacks)
        run.refresh_from_db()
        assert (run.status, run.done_count) == ("done", 4)
        assert len(provider.received) == 2

        _post(client, "judges:run_start", evaluation.pk, {"judge": judge.pk, "mode": "shadow"},
              lanes=django_capture_on_commit_callbacks, run_lanes=False)
        second = JudgeRun.objects.exclude(pk=run.pk).get()
        _post(client, "judges:run_cancel", second.pk, lanes=django_capture_on_commit_callbacks)
        second.refresh_from_db()
        assert (second.status, second.left_count) == ("cancelled", 4)
        response = client.post(reverse("judges:run_pause", args=[second.pk]), follow=True)
        assert "A cancelled run cannot be paused." in response.content.decode()
        assert JudgeRun.objects.get(pk=second.pk).status == "cancelled"
        assert len(provider.received) == 2


def test_a_missing_grade_fails_its_pair_alone_shows_it_and_retry_finishes_it(
        client, personas, evaluation, django_capture_on_commit_callbacks):
    client.force_login(personas.lead)
    with fake_provider(OPENAI) as provider:
        provider.then(all_but_last)
        judge = judge_for(personas.team, provider, counts=False)
        _post(client, "judges:run_start", evaluation.pk, {"judge": judge.pk, "mode": "shadow"},
              lanes=django_capture_on_commit_callbacks)
        run = JudgeRun.objects.get()
        assert (run.status, run.done_count, run.failed_count) == ("done", 3, 1)
        page = client.get(reverse("judges:run_detail", args=[run.pk]))
        item = JudgeRunItem.objects.get(run=run, status=JudgeRunItem.Status.FAILED)
        [failed] = page.context["failed_items"]
        assert (failed.keyword, failed.doc_id, failed.failure, failed.call_id) == (
            "query 1", "query 1-d2", "missing", item.call_id)
        html = page.content.decode()
        assert reverse("judges:call_detail", args=[item.call_id]) in html
        assert f'action="/judge-runs/{run.pk}/retry/"' in html

        response = _post(client, "judges:run_retry", run.pk,
                         lanes=django_capture_on_commit_callbacks)
        messages = [str(m) for m in get_messages(response.wsgi_request)]
        assert messages == ["1 failed pair asked again."]
    run.refresh_from_db()
    assert (run.status, run.done_count, run.failed_count) == ("done", 4, 0)
    item.refresh_from_db()
    assert (item.status, item.grade, item.failure) == ("done", 1, "")
    assert len(provider.received) == 3
    assert client.get(reverse("judges:run_detail", args=[run.pk])).context["failed_items"] == []
