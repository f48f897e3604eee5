"""The run page's polled part carries everything that changes, Test shows latency, tokens
and cost, and every cost names its currency."""

import re

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.test import APIClient

from judges import services
from judges.models import JudgeRun, JudgeRunItem
from tests.judges.fake_providers import OPENAI, answer, fake_provider
from tests.judges.run_builders import call_of, judge_of, priced, run_of
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
KEY = "sk-live-secret-1234567890"


@pytest.fixture
def run(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2)
    judge = priced(judge_of(personas.team, name="Picky"))
    return run_of(judge, evaluation, started_by=personas.lead, pair_count=4, done_count=2,
                  tokens_in=1000, tokens_out=200)


def fail_pairs(run: JudgeRun, count: int = 1) -> None:
    rows = run.evaluation.keywords.order_by("position", "snapshots__position").values_list(
        "pk", "snapshots__pk")[:count]
    call = call_of(run.judge, run=run)
    for keyword_id, snapshot_id in rows:
        JudgeRunItem.objects.create(
            run=run, snapshot_id=snapshot_id, keyword_id=keyword_id,
            status=JudgeRunItem.Status.FAILED, failure="missing",
            failure_detail="no grade for this document", call=call)
    JudgeRun.objects.filter(pk=run.pk).update(failed_count=count)


def test_the_polled_part_brings_failed_pairs_and_the_finished_time_without_a_reload(
    client, personas, run
):
    client.force_login(personas.lead)
    url = reverse("judges:run_detail", args=[run.pk])
    polled = client.get(url, **HTMX)
    assert polled.templates[0].name == "judges/_run_live.html"
    html = polled.content.decode()
    assert f'<div id="run-live" data-testid="run-live" hx-get="{url}" hx-trigger="every 2s" ' \
           'hx-swap="outerHTML">' in html
    assert "Finished" not in html and "None." in html

    # While the page waits, a pair fails and the run ends: the next poll carries both.
    fail_pairs(run)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE)
    run.refresh_from_db()
    run.finished_at = run.created_at
    run.save(update_fields=["finished_at"])
    html = client.get(url, **HTMX).content.decode()
    assert "no grade for this document" in html and "None." not in html
    assert re.search(r"<dt>Finished</dt><dd>[^<]+</dd>", html)
    assert 'data-field="failed">1<' in html
    assert "hx-trigger" not in html  # stopped: the last swap stops the polling


def test_a_long_failed_list_is_cut_and_says_where_the_rest_is(client, personas, run,
                                                             monkeypatch):
    from judges import views_runs

    monkeypatch.setattr(views_runs, "FAILED_SHOWN", 1)
    fail_pairs(run, count=2)
    client.force_login(personas.lead)
    html = client.get(reverse("judges:run_detail", args=[run.pk])).content.decode()
    assert html.count("no grade for this document") == 1
    assert f"The first 1 of 2; <span class=\"mono\">GET /api/v1/judge-runs/{run.pk}/failed/" \
           "</span> lists them all." in html


def test_cost_names_the_judges_currency_on_the_run_page_and_in_the_api(client, personas, run):
    services.judge_update(judge=run.judge, by=personas.admin, price_currency="eur")
    client.force_login(personas.lead)
    html = client.get(reverse("judges:run_detail", args=[run.pk])).content.decode()
    # 1000 tokens in at 2.50 and 200 out at 10 per million.
    assert 'data-field="cost">0.0045 EUR</dd>' in html
    api = APIClient()
    api.force_authenticate(personas.lead)
    body = api.get(f"/api/v1/judge-runs/{run.pk}/").json()
    assert (body["progress"]["cost"], body["progress"]["currency"]) == ("0.0045", "EUR")


def test_a_currency_that_is_not_three_letters_is_refused_naming_the_field(personas):
    judge = judge_of(personas.team)
    with pytest.raises(ValidationError) as raised:
        services.judge_update(judge=judge, by=personas.admin, price_currency="euro")
    assert raised.value.message_dict == {
        "price_currency": ["Three letters, a currency code such as USD or EUR."]}
    judge.refresh_from_db()
    assert judge.price_currency == "USD"


def test_test_shows_latency_tokens_and_cost_in_its_currency(client, personas):
    with fake_provider(OPENAI, api_key=KEY) as provider:
        provider.then(answer({"grades": [{"id": "d1", "grade": 1, "reason": "fits"}]}))
        judge = priced(judge_of(personas.team, base_url=provider.base_url, api_key=KEY))
        client.force_login(personas.admin)
        response = client.post(reverse("judges:judge_test", args=[judge.pk]), {
            "keyword": "chair", "scale": "binary",
            "documents": '{"id": "d1", "title": "Office chair"}'})
    assert response.status_code == 200
    html = response.content.decode()
    figures = dict(re.findall(r'<dd data-field="(\w+)">([^<]*)</dd>', html))
    latency = int(figures["latency"].removesuffix(" ms"))
    assert 0 <= latency < 30_000
    # The fake provider reports 120 tokens in and 40 out: 120 at 2.50 plus 40 at 10 per million.
    assert figures["tokens"] == "120 / 40"
    assert figures["cost"] == "0.0007 USD"
