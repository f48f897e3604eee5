"""The estimate before a run: pairs minus the judge's cache, calls by batch, tokens in
measured on rendered prompts, tokens out from the judge's history (or max_tokens, or a
guess), cost at its prices; on the start form (htmx) and in the API."""

import json
import math
from decimal import Decimal

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from judges import estimates, runs
from judges.core.prompts import grades_schema, system_prompt
from judges.estimates import judge_run_estimate
from judges.models import JudgeRun
from judges.token_counts import GUESS_TOKENS_OUT_PER_PAIR
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, fake_provider, grade_all
from tests.judges.run_builders import judge_of, priced
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HTTP_HX_REQUEST": "true"}
TEMPLATE = "{{keyword}}\n{{documents}}"
# What every call carries besides the user prompt, at 4 characters a token.
FIXED = math.ceil(len(system_prompt()) / 4) + math.ceil(
    len(json.dumps(grades_schema([0, 1, 2, 3]), separators=(",", ":"))) / 4)
# '{"id": "boots-d1", "fields": {"name": "Result 1 for boots"}}': 60 characters, 15 tokens.
DOC = 15


@pytest.fixture
def shoes_answered(personas):
    """A judge (batch 2, template TEMPLATE, priced 2.50 in and 10 out) whose shadow run on
    "shoes" (3 results) left 3 answers in its cache and 2 calls of 40 tokens out each."""
    first = evaluation_with_slots(personas.team, texts=["shoes"], positions=3)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all()
        judge = judge_for(personas.team, provider, counts=False, batch_size=2,
                          prompt_templates={"graded": TEMPLATE},
                          price_in_per_million=Decimal("2.50"),
                          price_out_per_million=Decimal("10"))
        run = runs.run_start(judge=judge, evaluation=first, mode=JudgeRun.Mode.SHADOW,
                             started_by=None)
    run.refresh_from_db()
    assert (run.status, run.call_count, run.tokens_out) == ("done", 2, 80)
    return judge


def test_it_counts_the_pairs_the_cache_does_not_answer(personas, shoes_answered,
                                                      monkeypatch):
    monkeypatch.setattr(estimates, "KEY_CHUNK", 2)  # the cache is read in chunks of keys
    evaluation = evaluation_with_slots(personas.team, texts=["shoes", "boots"], positions=3)
    estimate = judge_run_estimate(judge=shoes_answered, evaluation=evaluation,
                                  mode=JudgeRun.Mode.SHADOW)
    # "boots" d1+d2, then d3: two calls. User prompts "boots\n" + documents: 127
    # characters (32 tokens, 2 besides the documents' 30) and 66 (17, 2 besides 15).
    tokens_in = 2 * (FIXED + 2) + 3 * DOC
    # Its history: 80 tokens out for 3 pairs; ceil(2 x 80/3) + ceil(80/3) = 54 + 27.
    assert estimate == type(estimate)(
        pair_count=6, cached_count=3, asked_count=3, call_count=2, sampled_count=3,
        tokens_in=tokens_in, tokens_out=81, tokens_out_source="history",
        cost=((tokens_in * Decimal("2.50") + 81 * Decimal("10")) / 1_000_000).quantize(
            Decimal("0.0001")),
        currency="USD")


def test_refreshing_asks_every_pair_again(personas, shoes_answered):
    evaluation = evaluation_with_slots(personas.team, texts=["shoes", "boots"], positions=3)
    estimate = judge_run_estimate(judge=shoes_answered, evaluation=evaluation,
                                  mode=JudgeRun.Mode.SHADOW, refresh_cache=True)
    assert (estimate.pair_count, estimate.cached_count, estimate.call_count,
            estimate.sampled_count) == (6, 0, 4, 6)
    # Both keywords' prompts are alike in length ("shoes" and "boots"): 4 calls, 6 documents.
    assert estimate.tokens_in == 4 * (FIXED + 2) + 6 * DOC


def test_without_history_tokens_out_are_max_tokens_or_a_guess(personas):
    evaluation = evaluation_with_slots(personas.team, texts=["boots"], positions=3)
    capped = judge_of(personas.team, name="Capped", batch_size=2,
                      parameters={"max_tokens": 300})
    guessing = judge_of(personas.team, name="Guessing", batch_size=2)
    by_cap = judge_run_estimate(judge=capped, evaluation=evaluation,
                                mode=JudgeRun.Mode.SHADOW)
    by_guess = judge_run_estimate(judge=guessing, evaluation=evaluation,
                                  mode=JudgeRun.Mode.SHADOW)
    assert (by_cap.tokens_out, by_cap.tokens_out_source, by_cap.cost) == (
        600, "max_tokens", None)
    assert (by_guess.tokens_out, by_guess.tokens_out_source) == (
        3 * GUESS_TOKENS_OUT_PER_PAIR, "guess")


def test_the_start_form_shows_the_estimate(client, personas):
    evaluation = evaluation_with_slots(personas.team, texts=["boots"], positions=2)
    judge = priced(judge_of(personas.team, name="Sage", batch_size=2,
                            parameters={"max_tokens": 100}), price_in="0", price_out="1000")
    client.force_login(personas.lead)
    panel = client.get(reverse("judges:evaluation_runs", args=[evaluation.pk]), **HTMX)
    assert 'id="run-estimate"' in panel.content.decode()
    url = reverse("judges:run_estimate", args=[evaluation.pk])
    response = client.get(url, {"judge": judge.pk, "mode": "shadow"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    # One call of 100 tokens out at 1000 per million.
    assert "2 pairs to ask about" in html and "1 call," in html
    assert 'data-testid="estimate-cost">0.10 USD<' in html
    whole = client.get(url, {"judge": judge.pk, "mode": "shadow"})
    assert whole.status_code == 200 and "<html" in whole.content.decode()
    assert client.get(url, {"mode": "shadow"}).status_code == 400


def test_the_api_gives_the_estimate(personas):
    evaluation = evaluation_with_slots(personas.team, texts=["boots"], positions=2)
    judge = judge_of(personas.team, name="Sage", batch_size=2)
    api = APIClient()
    api.force_authenticate(personas.lead)
    url = f"/api/v1/evaluations/{evaluation.pk}/judge-runs/estimate/"
    body = api.get(url, {"judge": judge.pk, "mode": "shadow"}).json()
    assert body == {"pair_count": 2, "cached_count": 0, "asked_count": 2, "call_count": 1,
                    "sampled_count": 2, "tokens_in": body["tokens_in"],
                    "tokens_out": 2 * GUESS_TOKENS_OUT_PER_PAIR, "tokens_out_source": "guess",
                    "cost": None, "currency": "USD", "problem": "", "makes_calls": True,
                    "gradable_count": None}
    # The default template (its exact count is checked on a template of our own above).
    assert body["tokens_in"] > math.ceil(len(system_prompt()) / 4) + 2 * DOC
    bad = api.get(url, {"judge": 999_999, "mode": "shadow"})
    assert bad.status_code == 400 and set(bad.json()) == {"judge"}


def test_the_page_and_the_api_give_one_estimate_ticked_or_not(client, personas, shoes_answered):
    # "shoes" is in the cache (3 pairs), "boots" is not: the figures move with "ask again".
    evaluation = evaluation_with_slots(personas.team, texts=["shoes", "boots"], positions=3)
    client.force_login(personas.lead)
    api = APIClient()
    api.force_authenticate(personas.lead)
    url = reverse("judges:run_estimate", args=[evaluation.pk])
    api_url = f"/api/v1/evaluations/{evaluation.pk}/judge-runs/estimate/"
    seen = []
    for ticked in (False, True):
        query = {"judge": shoes_answered.pk, "mode": "shadow"}
        html = " ".join(client.get(
            url, {**query, **({"refresh_cache": "on"} if ticked else {})}, **HTMX,
        ).content.decode().split())
        body = api.get(api_url, {**query, "refresh_cache": str(ticked).lower()}).json()
        cost = Decimal(body["cost"])
        assert (f'{body["pair_count"]} pairs to ask about, {body["cached_count"]} answered by '
                f"the judge's cache;") in html
        assert f'{body["call_count"]} calls,' in html
        assert (f'about {body["tokens_in"]} tokens in and {body["tokens_out"]} out') in html
        assert f'data-testid="estimate-cost">{cost.normalize():f}' in html
        seen.append((body["cached_count"], body["call_count"]))
    assert seen == [(3, 2), (0, 4)]


def test_an_estimate_with_no_call_says_so_without_an_empty_tokens_out(client, personas,
                                                                     shoes_answered):
    # Every pair of "shoes" is in the cache: nothing to send, nothing to measure.
    evaluation = evaluation_with_slots(personas.team, texts=["shoes"], positions=3)
    client.force_login(personas.lead)
    response = client.get(reverse("judges:run_estimate", args=[evaluation.pk]),
                          {"judge": shoes_answered.pk, "mode": "shadow"}, **HTMX)
    assert response.status_code == 200
    html = " ".join(response.content.decode().split())
    assert "3 pairs to ask about, 3 answered by the judge's cache;" in html
    assert 'data-testid="no-calls">no call to make: the cache answers every pair, ' in html
    assert 'data-testid="estimate-cost">0.00 USD<' in html
    assert "tokens out ." not in html and "0 calls" not in html
