"""Notifications (notifications.services): finishing an evaluation reaches each member on
the channels they chose; mail carries a working one-click unsubscribe; webhooks are signed,
retried with backoff through the outbound policy and logged; the pages and the API."""

import hashlib
import hmac
import json
import re
import socket
import time
from urllib.parse import urlsplit

import pytest
import time_machine
from django.core import mail
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.events import By
from evaluations.services import lifecycle
from judges import batch_storing
from notifications import delivery as notification_delivery
from notifications import services
from notifications.models import (
    MAIL_BY_DEFAULT,
    Channel,
    Event,
    Notification,
    NotificationPreference,
    Webhook,
    WebhookDelivery,
)
from searchtweak.models import Role
from tests.evaluations.servers import Reply, running_server
from tests.judges.run_builders import judge_of, run_of
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import TeamFactory, member

pytestmark = pytest.mark.django_db


@pytest.fixture
def team_people():
    team = TeamFactory(name="Acme")
    people = {role: member(team, role, role) for role in
              (Role.OWNER, Role.ADMIN, Role.LEAD, Role.GRADER)}
    return team, people


@pytest.fixture
def fast_retries(settings):
    settings.WEBHOOK_RETRY_BACKOFF_MS = 10
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    settings.WEBHOOK_TIMEOUT_SECONDS = 2
    return settings


def _finish(evaluation, user, committed):
    with committed(execute=True):
        lifecycle.evaluation_finish(evaluation=evaluation, by=By.USER, user=user)


# --- fan-out ------------------------------------------------------------------------------------

def test_finishing_an_evaluation_notifies_each_member_who_wants_it(
        team_people, django_capture_on_commit_callbacks):
    team, people = team_people
    evaluation = evaluation_with_slots(team, keywords=1, positions=1, name="Shoes v2")
    # The grader wants no mail of it, the lead nothing in the app.
    services.preference_set(user_id=people[Role.GRADER].pk,
                                 event=Event.EVALUATION_FINISHED, channel=Channel.MAIL,
                                 enabled=False)
    services.preference_set(user_id=people[Role.LEAD].pk,
                                 event=Event.EVALUATION_FINISHED, channel=Channel.IN_APP,
                                 enabled=False)
    mail.outbox.clear()
    _finish(evaluation, people[Role.LEAD], django_capture_on_commit_callbacks)

    in_app = Notification.objects.filter(event=Event.EVALUATION_FINISHED)
    assert sorted(in_app.values_list("user__username", flat=True)) == ["admin", "grader",
                                                                       "owner"]
    first = in_app.first()
    assert first.text == "Evaluation “Shoes v2” finished (by hand)."
    assert first.url == f"/evaluations/{evaluation.pk}/"
    assert sorted(message.to[0] for message in mail.outbox) == [
        "admin@example.test", "lead@example.test", "owner@example.test"]
    assert mail.outbox[0].subject == "[SearchTweak] Evaluation “Shoes v2” finished (by hand)."


def test_a_judge_service_account_gets_nothing(team_people, django_capture_on_commit_callbacks):
    team, people = team_people
    judge = judge_of(team)
    evaluation = evaluation_with_slots(team, keywords=1, positions=1)
    _finish(evaluation, people[Role.LEAD], django_capture_on_commit_callbacks)
    assert not Notification.objects.filter(user=judge.user).exists()
    assert Notification.objects.count() == 4


def test_a_rolled_back_change_notifies_nobody(team_people, django_capture_on_commit_callbacks):
    team, _ = team_people
    with django_capture_on_commit_callbacks(execute=False):
        services.notify(team_id=team.pk, event=Event.RUN_REGRESSED, text="nDCG fell")
    assert Notification.objects.count() == 0


def test_a_judge_run_paused_by_crashes_notifies_the_team(
        team_people, settings, django_capture_on_commit_callbacks):
    settings.JUDGE_MAX_CRASH_STREAK = 2
    team, _ = team_people
    run = run_of(judge_of(team, name="Echo"), evaluation_with_slots(
        team, keywords=1, positions=1, name="Boots"))
    with django_capture_on_commit_callbacks(execute=True):
        assert batch_storing.run_crash_record(run_id=run.pk, detail="boom") is False
    assert Notification.objects.count() == 0
    with django_capture_on_commit_callbacks(execute=True):
        assert batch_storing.run_crash_record(run_id=run.pk, detail="boom") is True
    rows = Notification.objects.filter(event=Event.JUDGE_RUN_FAILED)
    assert rows.count() == 4
    assert rows.first().text.startswith("Judge run of “Echo” on “Boots” failed: Paused after 2")
    assert rows.first().url == f"/judge-runs/{run.pk}/"


# --- mail and unsubscribe ----------------------------------------------------------

def test_the_mail_unsubscribe_link_works_without_login(team_people, client,
                                                       django_capture_on_commit_callbacks):
    team, _ = team_people
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.notify(team_id=team.pk, event=Event.RUN_REGRESSED, text="nDCG@10 fell",
                             url="/compare/")
    owner_mail = next(m for m in mail.outbox if m.to == ["owner@example.test"])
    link = re.search(r"one click: (\S+)", owner_mail.body).group(1)
    assert owner_mail.extra_headers["List-Unsubscribe"] == f"<{link}>"
    assert owner_mail.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert "http://localhost:8000/compare/" in owner_mail.body
    path = urlsplit(link).path

    page = client.get(path)
    assert page.status_code == 200
    assert "Stop the e-mails to owner for “Run regressed”?" in page.content.decode()
    assert not NotificationPreference.objects.exists()  # a GET changes nothing
    # A mail client's one-click POST: no session, no CSRF token.
    answer = client.post(path, {"List-Unsubscribe": "One-Click"})
    assert answer.status_code == 200
    assert "no longer gets e-mails" in answer.content.decode()
    assert list(NotificationPreference.objects.values_list(
        "user__username", "event", "channel", "enabled")) == [
        ("owner", "run_regressed", "mail", False)]

    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.notify(team_id=team.pk, event=Event.RUN_REGRESSED, text="again")
    assert sorted(m.to[0] for m in mail.outbox) == [
        "admin@example.test", "grader@example.test", "lead@example.test"]


def test_a_tampered_unsubscribe_token_is_refused(team_people, client):
    _, people = team_people
    token = notification_delivery.unsubscribe_token(user_id=people[Role.OWNER].pk,
                                                    event=Event.RUN_REGRESSED)
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    for method in (client.get, client.post):
        answer = method(reverse("notifications:notification_unsubscribe", args=[tampered]))
        assert answer.status_code == 400
        assert "not valid" in answer.content.decode()
    assert not NotificationPreference.objects.exists()


def test_improved_runs_are_not_mailed_by_default(team_people, django_capture_on_commit_callbacks):
    team, _ = team_people
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.notify(team_id=team.pk, event=Event.RUN_IMPROVED, text="better")
    assert mail.outbox == []
    assert Notification.objects.count() == 4


def test_with_mail_turned_off_nothing_is_mailed_and_the_app_still_tells_them(
        team_people, django_capture_on_commit_callbacks):
    team, people = team_people
    for user in people.values():
        services.preference_set(user_id=user.pk, event=Event.RUN_REGRESSED,
                                     channel=Channel.MAIL, enabled=False)
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.notify(team_id=team.pk, event=Event.RUN_REGRESSED, text="nDCG fell")
    assert mail.outbox == []
    assert sorted(Notification.objects.values_list("user__username", "text")) == [
        ("admin", "nDCG fell"), ("grader", "nDCG fell"), ("lead", "nDCG fell"),
        ("owner", "nDCG fell")]


def test_a_mail_queued_before_the_user_turned_mail_off_is_not_sent(team_people):
    _, people = team_people
    owner = people[Role.OWNER]
    services.preference_set(user_id=owner.pk, event=Event.RUN_REGRESSED,
                                 channel=Channel.MAIL, enabled=False)
    mail.outbox.clear()
    assert notification_delivery.notification_mail_send(
        user_id=owner.pk, event=Event.RUN_REGRESSED, text="nDCG fell") is False
    assert mail.outbox == []


def test_turning_off_one_event_leaves_the_other_events_on(team_people,
                                                          django_capture_on_commit_callbacks):
    team, people = team_people
    owner = people[Role.OWNER]
    for channel in Channel.values:
        services.preference_set(user_id=owner.pk, event=Event.RUN_REGRESSED,
                                     channel=channel, enabled=False)
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.notify(team_id=team.pk, event=Event.SCHEDULE_PAUSED, text="paused")
    assert sorted(m.to[0] for m in mail.outbox) == [
        "admin@example.test", "grader@example.test", "lead@example.test", "owner@example.test"]
    assert Notification.objects.filter(user=owner, event=Event.SCHEDULE_PAUSED).count() == 1
    # The mail task asks again when it sends: the other event's choice does not stop it.
    assert notification_delivery.notification_mail_send(
        user_id=owner.pk, event=Event.SCHEDULE_PAUSED, text="paused again") is True
    assert mail.outbox[-1].to == ["owner@example.test"]


# --- webhooks -----------------------------------------------------------------------------------

def _webhook(team, url, events=(Event.EVALUATION_FINISHED,)):
    return services.webhook_create(team=team, created_by=None, url=url,
                                        events=list(events))


def test_a_webhook_is_signed_and_retried_until_the_receiver_answers(
        team_people, fast_retries, django_capture_on_commit_callbacks):
    team, people = team_people
    answers = iter([500, 500, 200])
    with running_server() as server:
        server.handler = lambda request: Reply(status=next(answers), body={"ok": True})
        webhook, secret = _webhook(team, f"{server.url}/hook")
        evaluation = evaluation_with_slots(team, keywords=1, positions=1, name="Shoes v2")
        _finish(evaluation, people[Role.LEAD], django_capture_on_commit_callbacks)

    assert len(server.received) == 3
    # Every attempt sends the same body but for its own time, signed.
    assert len({json.dumps({**json.loads(request.body), "timestamp": 0})
                for request in server.received}) == 1
    for request in server.received:
        expected = "sha256=" + hmac.new(secret.encode(), request.body,
                                        hashlib.sha256).hexdigest()
        assert hmac.compare_digest(request.headers["x-searchtweak-signature"], expected)
        body = json.loads(request.body)
        assert request.headers["x-searchtweak-timestamp"] == str(body["timestamp"])
        assert abs(time.time() - body["timestamp"]) < 60
        assert request.headers["x-searchtweak-event"] == "evaluation_finished"
    assert body["event"] == "evaluation_finished"
    assert body["text"] == (f"Evaluation “Shoes v2” finished (by hand). "
                            f"<http://localhost:8000/evaluations/{evaluation.pk}/|Open>")
    assert body["payload"]["evaluation"] == evaluation.pk
    delivery = WebhookDelivery.objects.get(webhook=webhook)
    assert (delivery.status, delivery.attempt_count, delivery.status_code, delivery.error) == (
        "sent", 3, 200, "")
    assert delivery.latency_ms is not None and delivery.sent_at is not None


def test_a_receiver_that_is_down_fails_after_the_retry_limit(
        team_people, fast_retries, django_capture_on_commit_callbacks):
    team, _ = team_people
    with running_server() as server:
        url = f"{server.url}/hook"
    webhook, _ = _webhook(team, url, events=[Event.RUN_REGRESSED])
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        services.notify(team_id=team.pk, event=Event.RUN_REGRESSED, text="fell")
    assert time.monotonic() - started < 5
    delivery = WebhookDelivery.objects.get(webhook=webhook)
    assert (delivery.status, delivery.attempt_count, delivery.status_code) == ("failed", 3, None)
    assert delivery.error.startswith("ConnectError")


def test_a_receiver_that_refuses_is_not_retried(team_people, fast_retries,
                                                django_capture_on_commit_callbacks):
    team, _ = team_people
    with running_server() as server:
        server.handler = lambda request: Reply(status=404, body={})
        webhook, _ = _webhook(team, f"{server.url}/gone", events=[Event.RUN_REGRESSED])
        with django_capture_on_commit_callbacks(execute=True):
            services.notify(team_id=team.pk, event=Event.RUN_REGRESSED, text="fell")
    delivery = WebhookDelivery.objects.get(webhook=webhook)
    assert (delivery.status, delivery.attempt_count, delivery.status_code, delivery.error) == (
        "failed", 1, 404, "the receiver answered 404")


def test_only_webhooks_that_asked_for_the_event_get_it(team_people, fast_retries,
                                                       django_capture_on_commit_callbacks):
    team, _ = team_people
    with running_server() as server:
        server.handler = lambda request: Reply(status=200, body={})
        wanted, _ = _webhook(team, f"{server.url}/a", events=[Event.RUN_REGRESSED])
        _webhook(team, f"{server.url}/b", events=[Event.RUN_IMPROVED])
        inactive, _ = _webhook(team, f"{server.url}/c", events=[Event.RUN_REGRESSED])
        services.webhook_update(webhook=inactive, active=False)
        with django_capture_on_commit_callbacks(execute=True):
            services.notify(team_id=team.pk, event=Event.RUN_REGRESSED, text="fell")
    assert [request.path for request in server.received] == ["/a"]
    assert list(WebhookDelivery.objects.values_list("webhook_id", "status")) == [
        (wanted.pk, "sent")]


def _pending_delivery(webhook, *, event=Event.RUN_REGRESSED):
    return WebhookDelivery.objects.create(
        webhook=webhook, event=event, body=notification_delivery.webhook_body(
            event=event, team_id=webhook.team_id, text="nDCG fell"))


def _attempts_when_due(delivery, count):
    """`count` attempts of the delivery, each made at the time the one before said."""
    waits = []
    for _ in range(count):
        delivery.refresh_from_db()
        with time_machine.travel(max(delivery.next_attempt_at, timezone.now()), tick=False):
            waits.append(notification_delivery.webhook_delivery_attempt(
                delivery_id=delivery.pk))
    return waits


def _answers_of(server, replies):
    answers = iter(replies)
    server.handler = lambda request: next(answers)


@pytest.mark.parametrize("status", [429, 503])
def test_a_retry_after_of_7_seconds_makes_the_next_wait_at_least_7(team_people, fast_retries,
                                                                   status):
    team, _ = team_people
    with running_server() as server:
        _answers_of(server, [Reply(status=status, body={}, headers={"Retry-After": "7"}),
                             Reply(status=status, body={})])
        webhook, _ = _webhook(team, f"{server.url}/hook", events=[Event.RUN_REGRESSED])
        delivery = _pending_delivery(webhook)
        waits = _attempts_when_due(delivery, 2)
    # Without the header the wait is the backoff alone: 10 ms, then 20 ms.
    assert waits == [7.0, 0.02]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count, delivery.status_code) == (
        "pending", 2, status)


def test_the_backoff_between_webhook_attempts_stops_growing_at_5_minutes(team_people,
                                                                        fast_retries):
    fast_retries.WEBHOOK_RETRY_BACKOFF_MS = 200_000
    fast_retries.WEBHOOK_MAX_ATTEMPTS = 4
    team, _ = team_people
    with running_server() as server:
        server.handler = lambda request: Reply(status=500, body={})
        webhook, _ = _webhook(team, f"{server.url}/hook", events=[Event.RUN_REGRESSED])
        delivery = _pending_delivery(webhook)
        waits = _attempts_when_due(delivery, 4)
    # 200 s, then 400 s and 800 s held to 300 s; the fourth attempt is the last.
    assert waits == [200.0, 300.0, 300.0, None]
    assert WebhookDelivery.objects.get().status == "failed"


@pytest.mark.parametrize(("retry_after", "wait", "status"), [
    ("300", 300.0, "pending"), ("301", None, "failed")])
def test_a_receiver_may_ask_for_5_minutes_at_most_and_asking_more_ends_the_delivery(
        team_people, fast_retries, retry_after, wait, status):
    team, _ = team_people
    with running_server() as server:
        server.handler = lambda request: Reply(status=429, body={},
                                               headers={"Retry-After": retry_after})
        webhook, _ = _webhook(team, f"{server.url}/hook", events=[Event.RUN_REGRESSED])
        delivery = _pending_delivery(webhook)
        assert notification_delivery.webhook_delivery_attempt(delivery_id=delivery.pk) == wait
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count, delivery.error) == (
        status, 1, "the receiver answered 429")


def test_each_attempt_sends_and_signs_its_own_time(team_people, fast_retries):
    team, _ = team_people
    made_at = 1_750_000_000
    with running_server() as server:
        _answers_of(server, [Reply(status=500, body={}), Reply(status=204, body=b"")])
        webhook, secret = _webhook(team, f"{server.url}/hook", events=[Event.RUN_REGRESSED])
        with time_machine.travel(made_at, tick=False):
            delivery = _pending_delivery(webhook)
        for later in (1, 2):
            with time_machine.travel(made_at + later, tick=False):
                notification_delivery.webhook_delivery_attempt(delivery_id=delivery.pk)
    assert WebhookDelivery.objects.get().status == "sent"
    # A receiver judges a body's age by its time: a retry's is the retry's, not the first
    # attempt's, and the header repeats the signed one.
    assert [json.loads(request.body)["timestamp"] for request in server.received] == [
        made_at + 1, made_at + 2]
    for request in server.received:
        assert request.headers["x-searchtweak-timestamp"] == str(
            json.loads(request.body)["timestamp"])
        assert request.headers["x-searchtweak-signature"] == "sha256=" + hmac.new(
            secret.encode(), request.body, hashlib.sha256).hexdigest()


def test_the_secret_is_stored_encrypted(team_people):
    team, _ = team_people
    webhook, secret = _webhook(team, "http://127.0.0.1:9/a")
    assert secret not in Webhook.objects.get().secret_encrypted
    assert notification_delivery.secret_decrypt(webhook.secret_encrypted) == secret


@pytest.mark.parametrize("url", ["http://10.0.0.1/hook", "http://169.254.169.254/latest",
                                 "http://localhost:9/hook"])
def test_a_denied_url_is_refused_on_the_form_and_the_api(team_people, settings, client, url):
    settings.OUTBOUND_DENY_NETWORKS = list(settings.OUTBOUND_PRODUCTION_DENY_NETWORKS)
    team, people = team_people
    client.force_login(people[Role.ADMIN])
    page = client.post(reverse("notifications:team_webhooks", args=[team.pk]),
                       {"url": url, "events": [Event.RUN_REGRESSED]})
    assert page.status_code == 400
    assert "The outbound policy refuses this address" in \
        page.context["form"].errors["url"][0]
    api = APIClient()
    api.force_authenticate(people[Role.ADMIN])
    answer = api.post(f"/api/v1/teams/{team.pk}/webhooks/",
                      {"url": url, "events": ["run_regressed"]}, format="json")
    assert answer.status_code == 400
    assert "url" in json.dumps(answer.json())
    assert "OUTBOUND_DENY_NETWORKS" in json.dumps(answer.json())
    assert not Webhook.objects.exists()


def test_a_host_name_is_judged_by_the_addresses_it_resolves_to(team_people, settings):
    team, _ = team_people
    # The suite runs with DEBUG's policy, which opens loopback for the tests' servers.
    webhook, _ = _webhook(team, "http://localhost:9/hook")
    settings.OUTBOUND_DENY_NETWORKS = list(settings.OUTBOUND_PRODUCTION_DENY_NETWORKS)
    first = socket.getaddrinfo("localhost", 9, type=socket.SOCK_STREAM)[0][4][0]
    network = "::1/128" if ":" in first else "127.0.0.0/8"
    refusal = (f"The outbound policy refuses this address: {first} is in a denied network "
               f"({network}, OUTBOUND_DENY_NETWORKS).")
    with pytest.raises(ValidationError) as created:
        _webhook(team, "http://localhost:9/other")
    assert created.value.message_dict == {"url": [refusal]}
    with pytest.raises(ValidationError) as updated:
        services.webhook_update(webhook=webhook, url="http://localhost:8/hook")
    assert updated.value.message_dict == {"url": [refusal]}
    assert list(Webhook.objects.values_list("url", flat=True)) == ["http://localhost:9/hook"]


def test_the_webhooks_page_shows_the_secret_once_and_sends_a_test(
        team_people, client, fast_retries, django_capture_on_commit_callbacks):
    team, people = team_people
    client.force_login(people[Role.ADMIN])
    with running_server() as server:
        server.handler = lambda request: Reply(status=204, body=b"")
        answer = client.post(reverse("notifications:team_webhooks", args=[team.pk]),
                             {"url": f"{server.url}/hook", "events": ["run_regressed"]})
        assert answer.status_code == 302
        webhook = Webhook.objects.get()
        shown = client.get(reverse("notifications:team_webhooks", args=[team.pk])).content.decode()
        secret = re.search(r'data-testid="webhook-secret">([^<]+)<', shown).group(1)
        assert notification_delivery.secret_decrypt(webhook.secret_encrypted) == secret
        again = client.get(reverse("notifications:team_webhooks", args=[team.pk])).content.decode()
        assert secret not in again
        with django_capture_on_commit_callbacks(execute=True):
            sent = client.post(reverse("notifications:webhook_test", args=[webhook.pk]))
        assert sent.status_code == 302
    assert [json.loads(r.body)["event"] for r in server.received] == ["test"]
    log = client.get(reverse("notifications:webhook_detail", args=[webhook.pk])).content.decode()
    assert 'data-testid="delivery-status">Sent<' in log
    assert "204" in log


def test_the_webhooks_api_creates_lists_changes_and_deletes(team_people):
    team, people = team_people
    api = APIClient()
    api.force_authenticate(people[Role.ADMIN])
    created = api.post(f"/api/v1/teams/{team.pk}/webhooks/",
                       {"url": "http://127.0.0.1:9/hook",
                        "events": ["run_regressed", "evaluation_finished"]}, format="json")
    assert created.status_code == 201
    data = created.json()
    # In the catalogue's order, whatever order they were given in.
    assert data["events"] == ["evaluation_finished", "run_regressed"]
    assert len(data["secret"]) >= 40
    listed = api.get(f"/api/v1/teams/{team.pk}/webhooks/").json()
    assert [hook["id"] for hook in listed] == [data["id"]] and "secret" not in listed[0]
    changed = api.patch(f"/api/v1/webhooks/{data['id']}/", {"active": False}, format="json")
    assert changed.json()["active"] is False and changed.json()["deliveries"] == []
    bad = api.patch(f"/api/v1/webhooks/{data['id']}/", {"events": ["nope"]}, format="json")
    assert bad.status_code == 400
    assert api.delete(f"/api/v1/webhooks/{data['id']}/").status_code == 204
    assert not Webhook.objects.exists()


def test_webhooks_are_for_admins_graders_403_outsiders_404(team_people, client):
    team, people = team_people
    webhook, _ = _webhook(team, "http://127.0.0.1:9/a")
    outsider = member(TeamFactory(), Role.OWNER, "outsider")
    for user, expected in ((people[Role.GRADER], 403), (people[Role.LEAD], 403),
                           (outsider, 404)):
        client.force_login(user)
        assert client.get(reverse("notifications:team_webhooks",
                                  args=[team.pk])).status_code == expected
        assert client.get(reverse("notifications:webhook_detail",
                                  args=[webhook.pk])).status_code == expected
        api = APIClient()
        api.force_authenticate(user)
        assert api.get(f"/api/v1/webhooks/{webhook.pk}/").status_code == expected
    assert Webhook.objects.count() == 1


# --- the bell, the list, the choices --------------------------------------------------

def _notes(user, team, count):
    return Notification.objects.bulk_create([
        Notification(user=user, team=team, event=Event.RUN_IMPROVED, text=f"note {n}")
        for n in range(count)])


def test_the_bell_counts_unread_and_pages_do_not_query_for_it(team_people, client):
    team, people = team_people
    owner = people[Role.OWNER]
    _notes(owner, team, 3)
    _notes(people[Role.GRADER], team, 2)
    client.force_login(owner)
    bell = client.get(reverse("notifications:notification_bell")).content.decode()
    assert 'data-testid="bell-count">3<' in bell
    home = client.get(reverse("home")).content.decode()
    assert 'data-bell-url="/notifications/bell/"' in home
    assert "bell-count" not in home


def test_mark_one_read_and_all_read(team_people, client):
    team, people = team_people
    owner = people[Role.OWNER]
    first, *_ = _notes(owner, team, 3)
    others = _notes(people[Role.GRADER], team, 1)
    client.force_login(owner)
    read = reverse("notifications:notification_read", args=[first.pk])
    assert client.post(read).status_code == 302
    assert services.unread_count(user=owner) == 2
    # Someone else's is a 404 and stays unread.
    assert client.post(reverse("notifications:notification_read",
                               args=[others[0].pk])).status_code == 404
    assert client.get(read).status_code == 405
    client.post(reverse("notifications:notification_read_all"))
    assert services.unread_count(user=owner) == 0
    assert services.unread_count(user=people[Role.GRADER]) == 1
    listed = client.get(reverse("notifications:notification_list")).content.decode()
    assert listed.count('data-testid="notification"') == 3


def test_the_api_lists_and_marks_read(team_people):
    team, people = team_people
    owner = people[Role.OWNER]
    notes = _notes(owner, team, 2)
    api = APIClient()
    api.force_authenticate(owner)
    listed = api.get("/api/v1/notifications/?unread=1").json()
    assert listed["count"] == 2
    assert [row["text"] for row in listed["results"]] == ["note 1", "note 0"]
    read = api.post(f"/api/v1/notifications/{notes[0].pk}/read/").json()
    assert read["read_at"] is not None
    assert api.post("/api/v1/notifications/read-all/").json() == {"marked": 1}


def test_the_preferences_page_saves_every_box(team_people, client):
    _, people = team_people
    owner = people[Role.OWNER]
    client.force_login(owner)
    page = client.get(reverse("notifications:notification_preferences")).content.decode()
    assert page.count('type="checkbox"') == len(Event.values) * len(Channel.values)
    assert page.count(" checked") == len(Event.values) + len(MAIL_BY_DEFAULT)  # in-app all
    client.post(reverse("notifications:notification_preferences"),
                {"run_improved:mail": "1", "evaluation_finished:in_app": "1"})
    chosen = services.preferences_of_user(user=owner)
    assert [key for key, on in chosen.items() if on] == [
        ("evaluation_finished", "in_app"), ("run_improved", "mail")]
