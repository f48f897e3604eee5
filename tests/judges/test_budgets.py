"""Hard budgets against a real local model server: a run pauses before the call that would
take it (or its team's month) over the cap, with the reason, and makes no such call."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from judges import runs
from judges.models import JudgeCall, JudgeRun, JudgeRunItem, JudgeTeamSpend, JudgeTrustPolicy
from notifications.models import Event, Notification
from tests.judges.builders import judge_for, lane_paused_by_first_answer
from tests.judges.fake_providers import OPENAI, fake_provider, grade_all
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quick_retries(settings):
    settings.JUDGE_RETRY_BACKOFF_MS = 10


def dollar_judge(team, provider, **fields):
    """Each call costs exactly 1.00 USD, and is expected to: the fake answers with 40 tokens
    out (and 120 in, free), priced 25 000 per million out; before any history the expected
    tokens out are max_tokens = 40, afterwards 40 per call of 2 pairs (its history)."""
    return judge_for(team, provider, counts=False, batch_size=2, max_concurrent_requests=1,
                     price_in_per_million=Decimal("0"),
                     price_out_per_million=Decimal("25000"),
                     parameters={"max_tokens": 40}, **fields)


def start(judge, evaluation, **options):
    return runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.SHADOW,
                          started_by=None, **options)


def test_a_run_pauses_before_the_call_that_would_pass_its_budget(personas):
    # 5 keywords of 2 results: 5 calls of 2 pairs, 1.00 each; a budget of 3.50 pays 3.
    evaluation = evaluation_with_slots(personas.team, keywords=5, positions=2)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all()
        judge = dollar_judge(personas.team, provider)
        run = start(judge, evaluation, budget=Decimal("3.50"))
        run.refresh_from_db()
        assert len(provider.received) == 3

    assert (run.status, run.call_count, run.done_count, run.left_count) == ("paused", 3, 6, 4)
    assert run.spend == Decimal("3.0000")
    assert run.pause_reason == ("Paused: the next call would take this run to 4.00 USD, "
                                "over its budget of 3.50 USD.")
    assert JudgeCall.objects.filter(run=run).count() == 3
    # The pairs it did not ask wait for a resume, unclaimed.
    assert set(JudgeRunItem.objects.filter(run=run).exclude(status="done").values_list(
        "status", "lease_expires_at")) == {("pending", None)}
    month = JudgeTeamSpend.objects.get(team=personas.team)
    assert (month.month_on, month.spend) == (timezone.localdate().replace(day=1),
                                             Decimal("3.0000"))
    assert runs.run_progress(run=run)["pause_reason"] == run.pause_reason
    # The team's leads are told: a paused run waits for someone to raise the budget.
    told = Notification.objects.filter(event=Event.JUDGE_RUN_PAUSED, user=personas.lead)
    assert list(told.values_list("text", "url")) == [(
        f"Judge run of “{judge.name}” on “{evaluation.name}”: {run.pause_reason}",
        f"/judge-runs/{run.pk}/")]


def test_the_teams_monthly_budget_holds_across_runs(personas):
    JudgeTrustPolicy.objects.create(team=personas.team, monthly_budget=Decimal("5"))
    first = evaluation_with_slots(personas.team, keywords=3, positions=2)
    # Other questions, so that the judge's cache answers none of them.
    second = evaluation_with_slots(personas.team, positions=2, texts=["a", "b", "c"])
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all()
        judge = dollar_judge(personas.team, provider)
        one = start(judge, first)
        two = start(judge, second)
        assert len(provider.received) == 5

    one.refresh_from_db()
    two.refresh_from_db()
    assert (one.status, one.call_count, one.spend) == ("done", 3, Decimal("3.0000"))
    assert (two.status, two.call_count, two.spend) == ("paused", 2, Decimal("2.0000"))
    month_name = timezone.localdate().strftime("%B %Y")
    assert two.pause_reason == (
        f"Paused: the next call would take the team's judge spend for {month_name} to "
        "6.00 USD, over its monthly budget of 5.00 USD.")
    assert JudgeTeamSpend.objects.get(team=personas.team).spend == Decimal("5.0000")


def test_the_spend_is_the_recorded_tokens_not_the_expectation(personas):
    # Expected 40 tokens out (max_tokens) for the first call; the model answers with 40,
    # then history says 40 per 2 pairs. A judge priced on tokens in too counts them as
    # recorded: 3 calls x (120 in x 2.50 + 40 out x 10) per million.
    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=2)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all()
        judge = judge_for(personas.team, provider, counts=False, batch_size=2,
                          price_in_per_million=Decimal("2.50"),
                          price_out_per_million=Decimal("10"))
        run = start(judge, evaluation, budget=Decimal("1"))

    run.refresh_from_db()
    assert (run.status, run.call_count) == ("done", 3)
    assert run.spend == 3 * Decimal("0.0007")  # 0.0003 + 0.0004 a call


def test_a_budget_needs_a_priced_judge_and_more_than_zero(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, counts=False)
        with pytest.raises(ValidationError) as unpriced:
            start(judge, evaluation, budget=Decimal("1"))
        judge.price_out_per_million = Decimal("1")
        judge.save(update_fields=["price_out_per_million"])
        with pytest.raises(ValidationError) as zero:
            start(judge, evaluation, budget=Decimal("0"))
    assert "has no prices" in unpriced.value.message_dict["budget"][0]
    assert zero.value.message_dict == {"budget": ["A budget is more than zero (or left empty)."]}
    assert not JudgeRun.objects.exists()
    assert provider.received == []


def test_the_start_form_and_the_api_take_a_budget(client, personas):
    from rest_framework.test import APIClient

    from tests.judges.run_builders import judge_of, priced

    first = evaluation_with_slots(personas.team, keywords=1, positions=1)
    second = evaluation_with_slots(personas.team, keywords=1, positions=1)
    # Its calls go to a closed port and fail; only where the budget lands matters here.
    judge = priced(judge_of(personas.team, name="Sage"))
    client.force_login(personas.lead)
    page = client.post(f"/evaluations/{first.pk}/judge-runs/start/",
                       {"judge": judge.pk, "mode": "shadow", "budget": "2.5"})
    assert page.status_code == 302
    api = APIClient()
    api.force_authenticate(personas.lead)
    body = api.post(f"/api/v1/evaluations/{second.pk}/judge-runs/",
                    {"judge": judge.pk, "mode": "shadow", "budget": "7"}, format="json").json()
    assert (body["budget"], body["spend"]) == ("7.0000", "0.0000")
    assert sorted(JudgeRun.objects.values_list("budget", flat=True)) == [
        Decimal("2.5"), Decimal("7")]


def test_concurrent_lanes_cannot_pass_the_budget_together(personas, monkeypatch):
    import threading

    from django.db import connection

    from judges import batch_claiming, tasks
    from tests.conftest import skip_or_fail
    from tests.judges.fake_providers import ModelAnswer, document_ids

    if connection.vendor != "postgresql":
        skip_or_fail("concurrent lanes need PostgreSQL's row locks: set DATABASE_URL")
    lanes = 4
    # One pair a call, each 1.00 (expected and charged): 3.50 pays 3 calls, whichever lanes.
    evaluation = evaluation_with_slots(personas.team, keywords=10, positions=1)
    monkeypatch.setattr(tasks, "run_lanes_dispatch", lambda run_id, count: None)
    errors: list[BaseException] = []
    gate = threading.Barrier(lanes)
    with fake_provider(OPENAI) as provider:
        provider.default = lambda prompt, request: ModelAnswer({"grades": [
            {"id": doc_id, "grade": 1, "reason": "ok"} for doc_id in document_ids(prompt)]},
            delay=0.05)
        judge = dollar_judge(personas.team, provider)
        judge.batch_size, judge.max_concurrent_requests = 1, lanes
        judge.save(update_fields=["batch_size", "max_concurrent_requests"])
        run = start(judge, evaluation, budget=Decimal("3.50"))

        def lane(number: int) -> None:
            try:
                gate.wait()
                while tasks.lane_work(run.pk, seconds=60, lane=batch_claiming.Lane(number, lanes)):
                    pass
            except BaseException as error:
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=lane, args=(n,)) for n in range(lanes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        received = len(provider.received)
    assert not errors, errors
    run.refresh_from_db()
    assert (received, run.call_count, run.done_count, run.status) == (3, 3, 3, "paused")
    assert run.spend == Decimal("3.0000")


def test_the_run_page_shows_the_budget_and_the_reason(client, personas):
    from tests.judges.run_builders import judge_of, priced, run_of

    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    run = run_of(priced(judge_of(personas.team, name="Sage")), evaluation,
                 status=JudgeRun.Status.PAUSED, budget=Decimal("5"), spend=Decimal("4.5"),
                 pause_reason="Paused: the next call would take this run to 5.02 USD, over "
                              "its budget of 5.00 USD.")
    client.force_login(personas.lead)
    html = client.get(f"/judge-runs/{run.pk}/").content.decode()
    assert "4.50 USD of 5.00 USD" in html
    assert "to 5.02 USD, over its budget of 5.00 USD." in html


def test_resuming_with_a_new_budget_goes_on_to_it(client, personas):
    from rest_framework.test import APIClient

    evaluation = evaluation_with_slots(personas.team, keywords=5, positions=2)
    client.force_login(personas.lead)
    api = APIClient()
    api.force_authenticate(personas.lead)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all()
        judge = dollar_judge(personas.team, provider)
        run = start(judge, evaluation, budget=Decimal("1.50"))
        run.refresh_from_db()
        assert (run.status, run.call_count) == ("paused", 1)
        page = client.get(f"/judge-runs/{run.pk}/").content.decode()
        assert 'value="1.5000" data-testid="resume-budget"' in page
        # The page: 3.50 pays two more calls, then it pauses again before the fourth.
        client.post(f"/judge-runs/{run.pk}/resume/", {"budget": "3.5"})
        run.refresh_from_db()
        assert (run.status, run.call_count, run.budget) == ("paused", 3, Decimal("3.5"))
        assert run.pause_reason == ("Paused: the next call would take this run to 4.00 USD, "
                                    "over its budget of 3.50 USD.")
        refused = api.post(f"/api/v1/judge-runs/{run.pk}/resume/", {"budget": "0"},
                           format="json")
        assert refused.status_code == 400 and set(refused.json()) == {"budget"}
        # The API: 10 pays the rest.
        body = api.post(f"/api/v1/judge-runs/{run.pk}/resume/", {"budget": "10"},
                        format="json").json()
        assert len(provider.received) == 5
    assert (body["status"], body["budget"], body["spend"]) == ("done", "10.0000", "5.0000")


def test_a_judge_priced_in_another_currency_than_the_monthly_cap_makes_no_call(personas):
    # A EUR cap and a USD judge: with no exchange rate, counting the call would be a guess
    # and not counting it would let the judge spend past the cap.
    JudgeTrustPolicy.objects.create(team=personas.team, monthly_budget=Decimal("100"),
                                    monthly_budget_currency="EUR")
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all()
        run = start(dollar_judge(personas.team, provider), evaluation)
        run.refresh_from_db()
        assert provider.received == []
    assert (run.status, run.call_count, run.spend) == ("paused", 0, Decimal("0"))
    assert run.pause_reason == (
        "Paused: the judge is priced in USD and the team's monthly budget is in EUR, so its "
        "calls cannot be counted against it. Price the judge in EUR, or change the "
        "budget's currency.")


def test_the_month_is_counted_per_currency(personas):
    # No cap: each judge's spend goes to its own currency's counter, never summed.
    first = evaluation_with_slots(personas.team, keywords=2, positions=2)
    second = evaluation_with_slots(personas.team, positions=2, texts=["a"])
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all()
        start(dollar_judge(personas.team, provider), first)
        start(dollar_judge(personas.team, provider, name="euro judge", price_currency="EUR"),
              second)
    assert dict(JudgeTeamSpend.objects.filter(team=personas.team).values_list(
        "currency", "spend")) == {"USD": Decimal("2.0000"), "EUR": Decimal("1.0000")}


def test_the_budget_currency_is_checked_and_saved(personas):
    from judges import trust
    with pytest.raises(ValidationError) as bad:
        trust.trust_policy_update(team=personas.team, min_pairs=30, min_kappa=0.4,
                                  by=None, monthly_budget=Decimal("5"),
                                  monthly_budget_currency="euro")
    assert bad.value.message_dict == {
        "monthly_budget_currency": ["Three letters, a currency code such as USD or EUR."]}
    assert not JudgeTrustPolicy.objects.exists()
    policy = trust.trust_policy_update(team=personas.team, min_pairs=30, min_kappa=0.4,
                                       by=None, monthly_budget=Decimal("5"),
                                       monthly_budget_currency=" eur ")
    assert (policy.monthly_budget, policy.monthly_budget_currency) == (Decimal("5"), "EUR")



def test_a_lane_counts_only_the_calls_it_makes_when_paused_with_batches_claimed_ahead(
        personas, monkeypatch):
    """A lane of several calls claims a round ahead of them. The run paused while its first
    call is out: the batch claimed behind it goes back unasked, and nothing of it stays
    counted (reserving at the claim left its 1.00 in the run's and the team's spend)."""
    from judges import tasks

    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=2)
    monkeypatch.setattr(tasks, "run_lanes_dispatch", lambda run_id, count: None)
    with fake_provider(OPENAI) as provider:
        judge = dollar_judge(personas.team, provider)
        judge.max_concurrent_requests = 4
        judge.save(update_fields=["max_concurrent_requests"])
        run = start(judge, evaluation, budget=Decimal("10.00"))
        asked = lane_paused_by_first_answer(run=run, judge=judge, provider=provider,
                                            answer=grade_all())
    run.refresh_from_db()
    assert (asked, run.status, run.call_count, run.done_count) == (1, "paused", 1, 2)
    assert run.spend == Decimal("1.0000")
    assert JudgeTeamSpend.objects.get(team=personas.team).spend == Decimal("1.0000")
    assert set(JudgeRunItem.objects.filter(run=run).exclude(status="done").values_list(
        "status", "lease_expires_at")) == {("pending", None)}


@pytest.mark.parametrize(("amount", "text"), [
    ("0.002", "0.002 USD"), ("0.0283", "0.0283 USD"), ("5", "5.00 USD"), ("12.5", "12.50 USD"),
    ("0", "0.00 USD"), ("1234.5678", "1234.5678 USD"),
])
def test_money_is_shown_with_the_digits_it_needs(amount, text):
    from judges.budgets import money

    assert money(Decimal(amount), "USD") == text


def test_a_budget_of_a_fraction_of_a_cent_never_reads_zero(client, personas):
    from tests.judges.run_builders import judge_of, priced, run_of

    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    run = run_of(priced(judge_of(personas.team, name="Sage")), evaluation,
                 status=JudgeRun.Status.PAUSED, budget=Decimal("0.002"),
                 spend=Decimal("0.0015"))
    client.force_login(personas.lead)
    html = client.get(f"/judge-runs/{run.pk}/").content.decode()
    assert 'data-field="budget">0.0015 USD of 0.002 USD <' in html
