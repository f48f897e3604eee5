"""The gauges read from shared state (Redis queues) and the counters the apps add to where
the work happens: grades, fetches, schedule ticks, webhook attempts, judge calls."""

import httpx
import pytest
import redis
from django.test import Client, override_settings
from django.utils import timezone

from evaluations.fetching.search_requests import fetch_keyword_results, request_spec_for
from judges import calls
from judges.core.prompts import Document
from judgments import scales as scale_lookup
from judgments.grading import feedback_submit, snapshot_grade
from judgments.models import FeedbackSlot
from judgments.selectors import snapshot_target_for_user
from monitoring.collectors import redis_queue_keys
from notifications.delivery import webhook_body, webhook_delivery_attempt
from notifications.models import Event, WebhookDelivery
from notifications.services import webhook_create
from schedules.firing import schedules_tick
from searchtweak.models import Role
from tests.evaluations.factories import fetchable_evaluation
from tests.evaluations.servers import Reply, hits, running_server
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, fake_provider
from tests.judgments.builders import evaluation_with_slots
from tests.monitoring.scrape import sample
from tests.searchtweak.factories import TeamFactory, member
from tests.workers import require_redis

pytestmark = pytest.mark.django_db

TOKEN = "scrape-me-7f3a"


def scrape() -> str:
    with override_settings(METRICS_TOKEN=TOKEN, METRICS_ALLOW=[]):
        response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    return response.content.decode()


def test_each_queue_reports_the_messages_waiting_in_redis():
    url = require_redis()
    queues = ["st-metrics-test-default", "st-metrics-test-fetch"]
    connection = redis.Redis.from_url(url)
    keys = [key for queue in queues for key in redis_queue_keys(queue)]
    connection.delete(*keys)
    try:
        connection.rpush(queues[0], "a", "b", "c")
        # kombu's list for priority 3 of the same queue: still that queue's messages.
        connection.rpush(redis_queue_keys(queues[0])[1], "d", "e")
        with override_settings(CELERY_BROKER_URL=url, WORKER_QUEUES=queues):
            text = scrape()
    finally:
        connection.delete(*keys)
    name = "searchtweak_celery_queue_length"
    assert sample(text, name, queue=queues[0]) == 5
    assert sample(text, name, queue=queues[1]) == 0
    assert f'queue="{queues[1]}"' in text  # an empty queue is reported, as 0
    assert sample(text, "searchtweak_broker_up") == 1


def test_an_unreachable_broker_reports_no_queue_and_broker_down():
    # Port 1 on loopback: nothing listens; the scrape still answers with the counters.
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        text = scrape()
    assert "searchtweak_celery_queue_length{" not in text
    assert sample(text, "searchtweak_broker_up") == 0
    assert "searchtweak_http_requests_total" in text


def test_a_grade_is_counted_once_its_transaction_commits(django_capture_on_commit_callbacks):
    team = TeamFactory()
    grader = member(team, Role.GRADER, "grader")
    evaluation = evaluation_with_slots(team, keywords=1, positions=2)
    slots = list(FeedbackSlot.objects.filter(evaluation=evaluation).order_by("pk"))
    FeedbackSlot.objects.filter(pk__in=[s.pk for s in slots]).update(
        user=grader, assigned_at=timezone.now(),
        lease_expires_at=timezone.now() + timezone.timedelta(minutes=5))
    name = "searchtweak_grades_written_total"
    before = sample(scrape(), name, source="person")
    with django_capture_on_commit_callbacks(execute=False) as pending:
        feedback_submit(user=grader, slot_id=slots[0].pk, grade=2)
    # Not yet: the transaction has not committed.
    assert sample(scrape(), name, source="person") == before
    for callback in pending:
        callback()
    with django_capture_on_commit_callbacks(execute=True):
        feedback_submit(user=grader, slot_id=slots[1].pk, grade=0)
    assert sample(scrape(), name, source="person") - before == 2


def test_fetches_are_counted_by_outcome_with_their_time():
    with running_server() as server:
        server.handler = lambda request: (
            Reply(body=hits(request.query["q"][0])) if request.query["q"][0] != "broken"
            else Reply(status=404, body={"error": "no"}))
        evaluation = fetchable_evaluation(url=server.url, keywords=["boots"])
        spec = request_spec_for(evaluation.model, limit=10)
        before = scrape()
        with httpx.Client() as http:
            ok = fetch_keyword_results(spec, "boots", client=http, retries=0)
            failed = fetch_keyword_results(spec, "broken", client=http, retries=0)
    assert ok.error == "" and failed.error != ""
    after = scrape()
    for outcome, added in (("ok", 1), ("error", 1)):
        name = "searchtweak_fetches_total"
        assert sample(after, name, outcome=outcome) - sample(
            before, name, outcome=outcome) == added
    name = "searchtweak_fetch_duration_seconds_count"
    assert sample(after, name) - sample(before, name) == 2


def test_a_schedules_tick_is_counted_with_the_overdue_runs_it_finished():
    before = scrape()
    report = schedules_tick()
    after = scrape()
    assert sample(after, "searchtweak_schedule_ticks_total") - sample(
        before, "searchtweak_schedule_ticks_total") == 1
    assert report.finished_overdue == 0
    assert sample(after, "searchtweak_schedule_runs_overdue_total") == sample(
        before, "searchtweak_schedule_runs_overdue_total")


def test_webhook_attempts_are_counted_by_outcome(settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    team = TeamFactory()
    name = "searchtweak_webhook_delivery_attempts_total"
    before = scrape()
    with running_server() as server:
        answers = iter([Reply(status=204, body=b""), Reply(status=500, body=b""),
                        Reply(status=500, body=b"")])
        server.handler = lambda request: next(answers)
        webhook, _ = webhook_create(team=team, created_by=None, url=f"{server.url}/hook",
                                    events=["run_regressed"])
        sent = _delivery(webhook)
        assert webhook_delivery_attempt(delivery_id=sent.pk) is None
        refused = _delivery(webhook)
        assert webhook_delivery_attempt(delivery_id=refused.pk) is not None  # a retry
        WebhookDelivery.objects.filter(pk=refused.pk).update(next_attempt_at=timezone.now())
        assert webhook_delivery_attempt(delivery_id=refused.pk) is None  # the last: failed
    after = scrape()
    assert {outcome: sample(after, name, outcome=outcome) - sample(before, name, outcome=outcome)
            for outcome in ("delivered", "retry", "failed")} == {
        "delivered": 1, "retry": 1, "failed": 1}


def _delivery(webhook) -> WebhookDelivery:
    return WebhookDelivery.objects.create(
        webhook=webhook, event=Event.RUN_REGRESSED, body=webhook_body(
            event=Event.RUN_REGRESSED, team_id=webhook.team_id, text="nDCG fell"))


def test_each_http_attempt_to_a_judge_is_counted_with_its_time(personas, settings):
    settings.JUDGE_RETRY_BACKOFF_MS = 5
    documents = [Document(id="a", fields={"title": "Office chair"})]
    name = "searchtweak_judge_calls_total"
    before = scrape()
    with fake_provider(OPENAI) as provider:
        judge = judge_for(personas.team, provider, max_retries=2)
        scale = scale_lookup.scale_for_team(team_id=judge.team_id, code="binary").scale
        assert calls.ask(judge=judge, keyword="chair", guidelines="", scale=scale,
                         documents=documents).ok
        # A 503 is retried: two attempts refused, then the third answered.
        serve = provider.server.handler
        answers = iter([Reply(status=503, body=b""), Reply(status=503, body=b"")])
        provider.server.handler = lambda request: next(answers, None) or serve(request)
        assert calls.ask(judge=judge, keyword="chair", guidelines="", scale=scale,
                         documents=documents).ok
    after = scrape()
    assert sample(after, name, outcome="ok") - sample(before, name, outcome="ok") == 2
    assert sample(after, name, outcome="error") - sample(before, name, outcome="error") == 2
    count = "searchtweak_judge_call_duration_seconds_count"
    assert sample(after, count) - sample(before, count) == 4


def test_grades_through_the_api_path_are_counted_on_each_route(
        personas, django_capture_on_commit_callbacks):
    """The first grade claims a slot (the general path); the second re-grades the caller's
    own slot, which PostgreSQL writes in one statement."""
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, strategy=3)
    snapshot = evaluation.keywords.get().snapshots.get()
    target = snapshot_target_for_user(user=personas.grader, snapshot_id=snapshot.pk)
    name = "searchtweak_grades_written_total"
    before = sample(scrape(), name, source="person")
    with django_capture_on_commit_callbacks(execute=True):
        snapshot_grade(user=personas.grader, target=target, grade=2)
    with django_capture_on_commit_callbacks(execute=True):
        snapshot_grade(user=personas.grader, target=target, grade=3)
    assert sample(scrape(), name, source="person") - before == 2
