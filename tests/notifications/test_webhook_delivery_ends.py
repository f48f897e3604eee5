"""A webhook delivery always ends: a URL the HTTP client cannot parse is refused when it
is saved (and a stored one fails its delivery at once); an attempt whose worker died is
made again once its claim lapses, never twice for one attempt number, each with its own
time; a new webhook's secret is never kept in the session row."""

import json
from datetime import timedelta

import pytest
import time_machine
from django.contrib.sessions.models import Session
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from notifications import delivery as notification_delivery
from notifications import services, tasks
from notifications.models import Event, Webhook, WebhookDelivery
from searchtweak.models import Role
from tests.conftest import skip_or_fail
from tests.evaluations.servers import Reply, running_server
from tests.searchtweak.factories import TeamFactory, member

pytestmark = pytest.mark.django_db

OCTAL_HOST = "http://0177.0.0.1:9/hook"


@pytest.fixture
def team_admin():
    team = TeamFactory(name="Acme")
    return team, member(team, Role.ADMIN, "admin")


def _delivery(webhook, **fields):
    return WebhookDelivery.objects.create(
        webhook=webhook, event=Event.RUN_REGRESSED, body=notification_delivery.webhook_body(
            event=Event.RUN_REGRESSED, team_id=webhook.team_id, text="nDCG fell"), **fields)


def test_a_url_the_http_client_cannot_parse_is_refused_on_the_form_and_the_api(
        team_admin, client):
    team, admin = team_admin
    client.force_login(admin)
    page = client.post(reverse("notifications:team_webhooks", args=[team.pk]),
                       {"url": OCTAL_HOST, "events": [Event.RUN_REGRESSED]})
    assert page.status_code == 400
    assert page.context["form"].errors["url"] == [
        "The HTTP client cannot read this URL: Invalid IPv4 address: '0177.0.0.1'."]
    api = APIClient()
    api.force_authenticate(admin)
    answer = api.post(f"/api/v1/teams/{team.pk}/webhooks/",
                      {"url": OCTAL_HOST, "events": ["run_regressed"]}, format="json")
    assert answer.status_code == 400
    assert "Invalid IPv4 address" in json.dumps(answer.json()["url"])
    webhook, _ = services.webhook_create(team=team, created_by=admin,
                                              url="http://127.0.0.1:9/hook",
                                              events=["run_regressed"])
    changed = api.patch(f"/api/v1/webhooks/{webhook.pk}/", {"url": OCTAL_HOST}, format="json")
    assert changed.status_code == 400 and "url" in changed.json()
    assert list(Webhook.objects.values_list("url", flat=True)) == ["http://127.0.0.1:9/hook"]


def test_a_stored_url_the_client_cannot_parse_fails_its_delivery_at_once(team_admin):
    team, _ = team_admin
    # Saved before the save read URLs as the client does.
    webhook = Webhook.objects.create(team=team, url=OCTAL_HOST, events=["run_regressed"],
                                     secret_encrypted=notification_delivery.secret_encrypt("s"))
    delivery = _delivery(webhook)
    tasks.webhook_deliver(delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count, delivery.claimed_at) == ("failed", 1, None)
    assert delivery.error == ("the HTTP client cannot read the URL: Invalid IPv4 address: "
                              "'0177.0.0.1'")


def _webhook_to(server, team):
    webhook, _ = services.webhook_create(
        team=team, created_by=None, url=f"{server.url}/hook", events=["run_regressed"])
    return webhook


def test_an_attempt_whose_worker_died_is_made_again_once_its_claim_lapses(
        team_admin, settings):
    team, _ = team_admin
    lease = notification_delivery.lease_seconds()
    started = timezone.now().replace(microsecond=0)
    with running_server() as server:
        server.handler = lambda request: Reply(status=204, body=b"")
        webhook = _webhook_to(server, team)
        # What a worker killed while sending attempt 1 leaves behind: the attempt claimed.
        delivery = _delivery(webhook, attempt_count=1, claimed_at=started,
                             next_attempt_at=started)
        with time_machine.travel(started + timedelta(seconds=lease - 1), tick=False):
            # A second message for the same delivery (the broker's redelivery) sends
            # nothing while the claim holds, and the sweep leaves it alone.
            assert notification_delivery.webhook_delivery_attempt(delivery_id=delivery.pk) \
                is None
            assert tasks.sweep_stalled_webhook_deliveries() == 0
        assert server.received == []
        retried_at = started + timedelta(seconds=lease + 1)
        with time_machine.travel(retried_at, tick=False):
            assert tasks.sweep_stalled_webhook_deliveries() == 1
    assert len(server.received) == 1
    body = json.loads(server.received[0].body)
    assert body["timestamp"] == int(retried_at.timestamp())
    assert server.received[0].headers["x-searchtweak-timestamp"] == str(body["timestamp"])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count, delivery.claimed_at) == ("sent", 2, None)
    assert lease < 5 * 60  # "within minutes"


@pytest.mark.django_db(transaction=True)
def test_an_attempt_in_flight_is_not_sent_again_by_a_second_message(team_admin):
    team, _ = team_admin
    with running_server() as server:
        seen = []

        def answer(request):
            # While attempt 1 is with the receiver, the same delivery's message arrives
            # again (a redelivery): it finds the attempt claimed and sends nothing.
            seen.append(notification_delivery.webhook_delivery_attempt(
                delivery_id=delivery.pk))
            return Reply(status=204, body=b"")

        server.handler = answer
        webhook = _webhook_to(server, team)
        delivery = _delivery(webhook)
        assert notification_delivery.webhook_delivery_attempt(delivery_id=delivery.pk) is None
    assert seen == [None]
    assert len(server.received) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count) == ("sent", 1)


def test_a_lost_message_is_sent_by_the_sweep_once_overdue(team_admin, settings):
    team, _ = team_admin
    settings.WEBHOOK_SWEEP_AFTER_SECONDS = 120
    with running_server() as server:
        server.handler = lambda request: Reply(status=204, body=b"")
        webhook = _webhook_to(server, team)
        delivery = _delivery(webhook)  # its message never reached a worker
        with time_machine.travel(delivery.next_attempt_at + timedelta(seconds=119)):
            assert tasks.sweep_stalled_webhook_deliveries() == 0
        with time_machine.travel(delivery.next_attempt_at + timedelta(seconds=121)):
            assert tasks.sweep_stalled_webhook_deliveries() == 1
    assert len(server.received) == 1
    assert WebhookDelivery.objects.get().status == "sent"


def test_a_last_attempt_whose_worker_died_ends_the_delivery_as_failed(team_admin, settings):
    team, _ = team_admin
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    webhook, _ = services.webhook_create(team=team, created_by=None,
                                              url="http://127.0.0.1:9/hook",
                                              events=["run_regressed"])
    started = timezone.now()
    delivery = _delivery(webhook, attempt_count=2, claimed_at=started, next_attempt_at=started)
    with time_machine.travel(started + timedelta(
            seconds=notification_delivery.lease_seconds() + 1)):
        assert tasks.sweep_stalled_webhook_deliveries() == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count, delivery.claimed_at) == ("failed", 2, None)
    assert delivery.error == "attempt 2 never reported back (its worker stopped); it was the last"
    assert tasks.sweep_stalled_webhook_deliveries() == 0


def test_a_new_webhooks_secret_is_not_kept_in_the_session_row(team_admin, client):
    team, admin = team_admin
    client.force_login(admin)
    answer = client.post(reverse("notifications:team_webhooks", args=[team.pk]),
                         {"url": "http://127.0.0.1:9/hook", "events": ["run_regressed"]})
    assert answer.status_code == 302
    webhook = Webhook.objects.get()
    secret = notification_delivery.secret_decrypt(webhook.secret_encrypted)
    stored = Session.objects.get(session_key=client.session.session_key)
    assert secret not in json.dumps(stored.get_decoded())
    assert secret not in stored.session_data
    shown = client.get(reverse("notifications:team_webhooks", args=[team.pk])).content.decode()
    assert f'data-testid="webhook-secret">{secret}<' in shown
    assert secret not in client.get(reverse("notifications:team_webhooks",
                                            args=[team.pk])).content.decode()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow_reason("starts real Celery workers and kills one mid-delivery")
def test_a_notify_worker_killed_mid_delivery_leaves_it_to_the_sweep(team_admin):
    import threading

    from django.db import connection

    from tests.workers import (
        celery_worker_process,
        database_url_for_workers,
        require_redis,
        tasks_sent_to,
        wait_until,
    )

    if connection.vendor != "postgresql":
        skip_or_fail("workers on one database need PostgreSQL: set DATABASE_URL")
    broker_url = require_redis()
    team, _ = team_admin
    released = threading.Event()
    with running_server() as server:
        def answer(request):
            if len(server.received) == 1:
                released.wait(timeout=60)  # attempt 1 is with the receiver when it dies
            return Reply(status=204, body=b"")

        server.handler = answer
        webhook = _webhook_to(server, team)
        database_url = database_url_for_workers()
        try:
            with celery_worker_process(broker_url=broker_url, database_url=database_url) \
                    as first, tasks_sent_to(broker_url=broker_url, queue=first.queue):
                delivery = _delivery(webhook)
                tasks.webhook_deliveries_dispatch([delivery.pk])
                wait_until(lambda: len(server.received) == 1, "attempt 1 at the receiver")
                first.kill()
        finally:
            released.set()
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempt_count) == ("pending", 1)
        assert delivery.claimed_at is not None
        # Its claim is still held: a new message for it sends nothing.
        assert notification_delivery.webhook_delivery_attempt(delivery_id=delivery.pk) is None
        # The worker died long ago: its claim lapsed.
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            claimed_at=delivery.claimed_at - timedelta(
                seconds=notification_delivery.lease_seconds() + 1))
        with celery_worker_process(broker_url=broker_url, database_url=database_url,
                                   queue=first.queue), \
                tasks_sent_to(broker_url=broker_url, queue=first.queue):
            # What beat does every WEBHOOK_SWEEP_EVERY_SECONDS, through the new worker
            # (the dead one's message, acked late, waits for the visibility timeout).
            tasks.sweep_stalled_webhook_deliveries.delay()
            wait_until(lambda: WebhookDelivery.objects.get(pk=delivery.pk).status == "sent",
                       "sent by attempt 2")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count, delivery.claimed_at) == ("sent", 2, None)
    first_time, second_time = (json.loads(request.body)["timestamp"]
                               for request in server.received)
    assert len(server.received) == 2 and second_time >= first_time
    assert server.received[1].headers["x-searchtweak-timestamp"] == str(second_time)
