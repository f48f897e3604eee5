"""The one notification service: `notify` announces an event of a team; each member who
wants it gets it in the app and by mail (their choices, NotificationPreference, else the
defaults), and each of the team's active webhooks that asked for the event gets a signed
POST (notifications.delivery).

Callers are the apps that know the events (the evaluations' finish, judges.batch_storing,
and the verdict and schedule code): they call `notify` inside or outside a transaction;
nothing happens before it commits. The in-app rows are written at once (one insert); the
mails and webhook attempts go to workers, so nothing waits on a mail server or receiver.
"""

import ipaddress
import logging
import secrets
import socket

import httpx
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from audit.models import Action
from audit.services import audit_object, fields_of
from notifications import delivery as notification_delivery
from notifications import tasks
from notifications.models import (
    Channel,
    Event,
    Notification,
    NotificationPreference,
    Webhook,
    WebhookDelivery,
    enabled_by_default,
)
from searchtweak import access, outbound
from searchtweak.models import Membership, Role, Team, User, role_at_least

logger = logging.getLogger(__name__)


def notify(*, team_id: int, event: str, text: str, url: str = "",
           payload: dict | None = None, minimum_role: str | None = None) -> None:
    """Announce `event` (an Event) of a team, after the current transaction commits.
    `text` is one line a person reads; `url` a path in the app (or an absolute URL);
    `payload` extra JSON for webhooks; `minimum_role`: only members at that role or above
    are told in the app or by mail (a grader's accuracy is for leads). Never raises on
    delivery trouble: a failure is logged, and the change that announced it stands."""
    Event(event)  # an unknown event is the caller's bug: raise it now, not after commit
    transaction.on_commit(lambda: _fan_out(team_id=team_id, event=event, text=text[:500],
                                           url=url[:500], payload=payload,
                                           minimum_role=minimum_role))


def _fan_out(*, team_id: int, event: str, text: str, url: str, payload: dict | None,
             minimum_role: str | None = None) -> None:
    try:
        recipients = _recipients(team_id=team_id, event=event, minimum_role=minimum_role)
        Notification.objects.bulk_create([
            Notification(user_id=user_id, team_id=team_id, event=event, text=text, url=url)
            for user_id in recipients[Channel.IN_APP]])
        deliveries = _deliveries_create(team_id=team_id, event=event, text=text, url=url,
                                        payload=payload)
    except Exception:
        logger.exception("notifying %s of team %s failed", event, team_id)
        return
    tasks.notification_mails_dispatch(user_ids=recipients[Channel.MAIL], event=event,
                                      text=text, url=url)
    tasks.webhook_deliveries_dispatch([delivery.pk for delivery in deliveries])


def _recipients(*, team_id: int, event: str,
                minimum_role: str | None = None) -> dict[str, list[int]]:
    """The team's people (not judges' service accounts, at `minimum_role` or above when
    given) who want `event`, per channel."""
    members = [(user_id, email) for user_id, email, role in Membership.objects.filter(
        team_id=team_id, user__is_active=True, user__is_judge=False,
    ).order_by("user_id").values_list("user_id", "user__email", "role")
        if minimum_role is None or role_at_least(role, minimum_role)]
    chosen = {(user_id, channel): enabled for user_id, channel, enabled in
              NotificationPreference.objects.filter(
                  user_id__in=[user_id for user_id, _ in members], event=event,
              ).values_list("user_id", "channel", "enabled")}
    return {channel: [user_id for user_id, email in members
                      if chosen.get((user_id, channel), enabled_by_default(event, channel))
                      and (channel != Channel.MAIL or email)]
            for channel in Channel.values}


def _deliveries_create(*, team_id: int, event: str, text: str, url: str,
                       payload: dict | None) -> list[WebhookDelivery]:
    hooks = [hook for hook in Webhook.objects.filter(team_id=team_id, active=True)
             if event in hook.events]
    if not hooks:
        return []
    body = notification_delivery.webhook_body(event=event, team_id=team_id, text=text, url=url,
                                              payload=payload)
    return WebhookDelivery.objects.bulk_create([
        WebhookDelivery(webhook=hook, event=event, body=body) for hook in hooks])


# --- the in-app list -----------------------------------------------------------------------------

def notifications_of_user(*, user: User) -> QuerySet[Notification]:
    return Notification.objects.filter(user=user).order_by("-created_at", "-id")


def unread_count(*, user: User) -> int:
    return Notification.objects.filter(user=user, read_at=None).count()


def notification_get_for_user(*, user: User, notification_id: int) -> Notification:
    """A user's own notification; anyone else's is a 404 like a missing one."""
    notification = Notification.objects.filter(pk=notification_id, user=user).first()
    if notification is None:
        raise Http404("No such notification.")
    return notification


def notification_mark_read(*, notification: Notification) -> Notification:
    if notification.read_at is None:
        notification.read_at = timezone.now()
        notification.save(update_fields=["read_at"])
    return notification


def notifications_mark_all_read(*, user: User) -> int:
    return Notification.objects.filter(user=user, read_at=None).update(read_at=timezone.now())


# --- preferences ---------------------------------------------------------------------------------

def preferences_of_user(*, user: User) -> dict[tuple[str, str], bool]:
    """Every (event, channel) with whether the user gets it."""
    chosen = {(row.event, row.channel): row.enabled
              for row in NotificationPreference.objects.filter(user=user)}
    return {(event, channel): chosen.get((event, channel), enabled_by_default(event, channel))
            for event in Event.values for channel in Channel.values}


@transaction.atomic
def preferences_save(*, user: User, enabled: set[tuple[str, str]]) -> None:
    """Store the user's choice for every (event, channel): on for those in `enabled`."""
    for event in Event.values:
        for channel in Channel.values:
            preference_set(user_id=user.pk, event=event, channel=channel,
                           enabled=(event, channel) in enabled)


def preference_set(*, user_id: int, event: str, channel: str, enabled: bool) -> None:
    NotificationPreference.objects.update_or_create(
        user_id=user_id, event=event, channel=channel, defaults={"enabled": enabled})


def unsubscribe(*, token: str) -> tuple[User, str]:
    """Turn off the mails of the event a signed unsubscribe link names; (user, event).
    ValidationError for a token this server did not sign (or a user who is gone)."""
    read = notification_delivery.unsubscribe_token_read(token)
    user = User.objects.filter(pk=read[0]).first() if read else None
    if user is None:
        raise ValidationError("This unsubscribe link is not valid.")
    preference_set(user_id=user.pk, event=read[1], channel=Channel.MAIL, enabled=False)
    return user, read[1]


def unsubscribe_target(*, token: str) -> tuple[User, str] | None:
    read = notification_delivery.unsubscribe_token_read(token)
    user = User.objects.filter(pk=read[0]).first() if read else None
    return (user, read[1]) if user is not None else None


# --- webhooks ------------------------------------------------------------------------------------

def webhook_url_refusal(url: str) -> str:
    """Why `url` cannot be a webhook ("" when it can): not an http(s) URL with a host as the
    HTTP client that sends it reads it (outbound.url_problem), or a host the outbound
    policy denies (checked on the addresses it resolves to now; every send checks again on
    the address it really reaches)."""
    if any(char.isspace() for char in url):
        return "Enter an http:// or https:// URL."
    problem = outbound.url_problem(url)
    if problem:
        return problem
    parsed = httpx.URL(url)
    host = parsed.host
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, parsed.port or 443, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError):
            return ""  # not resolvable now: each send checks the address it reaches
        addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    for address in addresses:
        reason = outbound.address_refusal(address)
        if reason:
            return f"The outbound policy refuses this address: {reason}."
    return ""


def _events_clean(events: list[str]) -> list[str]:
    unknown = [event for event in events if event not in Event.values]
    if unknown:
        raise ValidationError({"events": f"Unknown events: {', '.join(unknown)}."})
    if not events:
        raise ValidationError({"events": "Choose at least one event."})
    return [event for event in Event.values if event in events]


@transaction.atomic
def webhook_create(*, team: Team, created_by: User | None, url: str,
                   events: list[str]) -> tuple[Webhook, str]:
    """A new webhook and its secret, which is returned here once and stored encrypted."""
    url = url.strip()
    refusal = webhook_url_refusal(url)
    if refusal:
        raise ValidationError({"url": refusal})
    events = _events_clean(list(events))
    secret = secrets.token_urlsafe(32)
    webhook = Webhook.objects.create(
        team=team, created_by=created_by, url=url, events=events,
        secret_encrypted=notification_delivery.secret_encrypt(secret))
    audit_object(action=Action.WEBHOOK_CREATED, instance=webhook, object_type="webhook",
                 actor=created_by, after=fields_of(webhook))
    return webhook, secret


def webhook_new_secret(*, team: Team, webhook_id: int) -> dict | None:
    """{"id", "secret"} of the team's webhook `webhook_id`, for the one page that shows a
    new webhook's secret; None when the team has no such webhook (deleted since)."""
    webhook = Webhook.objects.filter(team=team, pk=webhook_id).first()
    if webhook is None:
        return None
    return {"id": webhook.pk,
            "secret": notification_delivery.secret_decrypt(webhook.secret_encrypted)}


@transaction.atomic
def webhook_update(*, webhook: Webhook, url: str | None = None, events: list[str] | None = None,
                   active: bool | None = None) -> Webhook:
    before = fields_of(webhook)
    fields = []
    if url is not None:
        refusal = webhook_url_refusal(url.strip())
        if refusal:
            raise ValidationError({"url": refusal})
        webhook.url = url.strip()
        fields.append("url")
    if events is not None:
        webhook.events = _events_clean(list(events))
        fields.append("events")
    if active is not None:
        webhook.active = active
        fields.append("active")
    if fields:
        webhook.save(update_fields=fields)
        audit_object(action=Action.WEBHOOK_CHANGED, instance=webhook, object_type="webhook",
                     before=before, after=fields_of(webhook))
    return webhook


@transaction.atomic
def webhook_delete(*, webhook: Webhook) -> None:
    audit_object(action=Action.WEBHOOK_DELETED, instance=webhook, object_type="webhook",
                 before=fields_of(webhook))
    webhook.delete()


def webhook_test_send(*, webhook: Webhook, user: User) -> WebhookDelivery:
    """A test delivery (event "test") to one webhook, sent by a worker after commit."""
    body = notification_delivery.webhook_body(
        event=notification_delivery.TEST_EVENT, team_id=webhook.team_id,
        text=f"Test from SearchTweak, sent by {user.username}: this webhook works.")
    delivery = WebhookDelivery.objects.create(webhook=webhook,
                                              event=notification_delivery.TEST_EVENT, body=body)
    transaction.on_commit(lambda: tasks.webhook_deliveries_dispatch([delivery.pk]))
    return delivery


# Webhooks send the team's news to another server and hold a secret: team configuration,
# like scales, so an admin's.
WEBHOOKS_ROLE = Role.ADMIN


def team_for_webhooks(*, user: User, team_id: int) -> Team:
    return access.team_access(user=user, team_id=team_id, minimum_role=WEBHOOKS_ROLE).team


def webhook_get_for_user(*, user: User, webhook_id: int) -> Webhook:
    return access.row_get_for_user(Webhook.objects.select_related("team"), user=user,
                                   pk=webhook_id, what="webhook", minimum_role=WEBHOOKS_ROLE)


def webhooks_of_team(*, team: Team) -> QuerySet[Webhook]:
    return Webhook.objects.filter(team=team).order_by("created_at", "id")


def webhook_deliveries(*, webhook: Webhook, limit: int = 50) -> list[WebhookDelivery]:
    return list(webhook.deliveries.order_by("-created_at", "-id")[:limit])
