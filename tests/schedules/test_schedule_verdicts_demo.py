"""A schedule scenario on the demo, with a clock the test moves: a schedule that
compares each run with the previous one. Its first run (BM25) has nothing to compare with;
switched to the deliberately worse demo model (ranking=cheap-first) the next run is
*regressed* with p < 0.05 and the team hears of it once per channel (in the app, by mail,
by webhook); the same model again is *no change*; a run whose fetch failed for half its
keywords is *undecided*. Runs are fetched from the demo engine in-process (as seed_demo
does) and graded by the demo's own relevance rule; the verdicts come from the listeners."""

from datetime import UTC, datetime, timedelta

import httpx
import pytest
import time_machine
from django.core import mail
from django.core.management import call_command

from evaluations import demo
from evaluations.fetching import services as fetch_services
from evaluations.management.commands.seed_demo import DEMO_KEYWORDS, MODEL_NAME
from evaluations.models import Evaluation, Keyword, SearchModel
from evaluations.query_sets import services as query_set_services
from metrics.management.commands.seed_demo_history import Command as DemoHistory
from metrics.models import RegressionVerdict
from metrics.services import evaluation_metrics_recompute
from notifications import services as notification_services
from notifications.models import Event, Notification, WebhookDelivery
from schedules import firing
from schedules import services as schedule_services
from schedules.models import Schedule, ScheduleRun
from searchtweak.models import Team, User
from tests.evaluations.servers import Reply, running_server
from tests.metrics.demo_grading import grade_ungraded_by_demo_relevance

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
METRICS = [{"code": "ndcg", "k": 10, "params": {}}, {"code": "precision", "k": 10, "params": {}}]


def half_down(transport: httpx.BaseTransport) -> httpx.BaseTransport:
    """The demo engine answering the first half of the demo keywords, 503 to the rest."""
    served = set(DEMO_KEYWORDS[: len(DEMO_KEYWORDS) // 2])

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("q") in served:
            return transport.handle_request(request)
        return httpx.Response(503, json={"error": "down"})

    return httpx.MockTransport(handle)


def run_at(hour: int, capture, *, transport=None) -> RegressionVerdict:
    """Tick at START + hour (the schedule fires), fetch the new run from the demo engine,
    grade what reuse left ungraded by the demo's relevance rule, recompute: the run
    finishes by itself and its verdict is stored by the listeners."""
    at = START + timedelta(hours=hour)
    with time_machine.travel(at, tick=False):
        # The fetch the tick sends after commit goes to the workers; here the test fetches.
        with capture(execute=False):
            assert firing.schedules_tick().fired == 1
        run = ScheduleRun.objects.get(due_at=at)
        evaluation = run.evaluation
        waiting = list(evaluation.keywords.filter(fetch_status=Keyword.FetchStatus.PENDING)
                       .values_list("pk", flat=True))
        with capture(execute=True):
            fetch_services.keywords_fetch(evaluation_id=evaluation.pk, keyword_ids=waiting,
                                          transport=transport or demo.in_process_transport())
        grade_ungraded_by_demo_relevance(evaluation, at=at)
        with capture(execute=True):
            evaluation_metrics_recompute(evaluation_id=evaluation.pk)
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.FINISHED
    return RegressionVerdict.objects.get(evaluation=evaluation)


@pytest.mark.timeout(600)
@pytest.mark.slow_reason("seeds the demo and fetches and grades several schedule runs")
def test_a_schedule_regresses_on_the_worse_model_and_says_so_once_per_channel(
        django_capture_on_commit_callbacks, settings):
    settings.FETCH_RETRIES = 0
    capture = django_capture_on_commit_callbacks
    call_command("seed_demo", verbosity=0)
    team = Team.objects.get(name="Demo")
    lead = User.objects.get(username="lead")
    bm25 = SearchModel.objects.get(team=team, name=MODEL_NAME)
    cheap = DemoHistory()._cheap_model(team, bm25)
    query_set = query_set_services.query_set_create(team=team, created_by=lead, name="Demo queries",
                                                    keywords=DEMO_KEYWORDS)
    with time_machine.travel(START, tick=False):
        schedule = schedule_services.schedule_create(
            team=team, created_by=lead, name="Hourly", model=bm25, query_set=query_set,
            scale="graded", strategy=1, metrics=METRICS, interval_minutes=60,
            baseline=Schedule.Baseline.PREVIOUS)

    first = run_at(0, capture)
    assert first.verdict == "undecided" and first.baseline is None
    assert not Notification.objects.filter(event__startswith="run_").exists()  # nobody's news

    schedule_services.schedule_update(schedule=schedule, model=cheap)
    mail.outbox.clear()
    with running_server() as receiver:
        receiver.handler = lambda request: Reply(status=200, body={"ok": True})
        webhook, _ = notification_services.webhook_create(team=team, created_by=lead,
                                                  url=f"{receiver.url}/hook",
                                                  events=[Event.RUN_REGRESSED])
        worse = run_at(1, capture)
    assert worse.verdict == "regressed" and worse.baseline == first.evaluation
    ndcg = worse.metrics[0]
    assert ndcg["label"] == "nDCG@10" and ndcg["p_adjusted"] < 0.05 and ndcg["ci_high"] < 0
    assert worse.reasons[1].startswith("nDCG@10 fell ")
    # One notification per channel: each member once in the app, the lead once by mail,
    # the webhook once.
    members = set(team.memberships.exclude(user__is_judge=True).values_list("user_id",
                                                                           flat=True))
    regressed = Notification.objects.filter(event=Event.RUN_REGRESSED)
    assert sorted(regressed.values_list("user_id", flat=True)) == sorted(members)
    to_lead = [message.subject for message in mail.outbox if lead.email in message.to]
    # The lead also hears that the run finished (its own event, mailed by default).
    assert len(to_lead) == 2 and sum("fell" in subject for subject in to_lead) == 1
    assert WebhookDelivery.objects.filter(webhook=webhook).count() == 1
    assert len(receiver.received) == 1

    same = run_at(2, capture)
    assert same.verdict == "no_change" and same.baseline == worse.evaluation
    assert "The rankings are identical (RBO 1) on every shared keyword." in same.reasons

    half = run_at(3, capture, transport=half_down(demo.in_process_transport()))
    assert half.verdict == "undecided" and half.baseline == same.evaluation
    assert half.reasons[1] == ("Undecided: nDCG@10: only 25 of 50 keywords have a value "
                               "(50 %), below the minimum 90 %.")
    assert "25 of 50 keywords of the run failed to fetch: they have no value." in half.reasons
    assert RegressionVerdict.objects.filter(evaluation__schedule_run__schedule=schedule
                                            ).count() == 4
