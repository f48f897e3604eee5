"""How a notification leaves the app: a webhook delivery's attempts and a user's mail.

Both run in a worker (notifications.tasks), or on a background thread without a broker, so
a slow or broken receiver or mail server never holds up the process that announced the
event. A webhook body is JSON with a `text` field (what Slack and Mattermost incoming
webhooks show) and its `timestamp`, the time of the attempt that sends it;
`X-SearchTweak-Signature: sha256=<hex>` is the HMAC-SHA256 of the raw body with the
webhook's secret, and `X-SearchTweak-Timestamp` repeats the body's timestamp, so a receiver
can refuse an old body replayed.

An attempt is claimed on the delivery row before it is sent, as fetch claims are: one
conditional UPDATE counts it, stamps `claimed_at` and the body's time, and only the process
whose UPDATE matched sends it, so no attempt is sent twice. A worker that dies mid-attempt
leaves the claim to lapse (`lease_seconds`); `webhook_deliveries_stalled` (the sweep)
finds it, and the overdue deliveries whose message was lost, and the next attempt follows.
"""

import base64
import hashlib
import hmac
import json
import logging
import math
import time
from datetime import datetime, timedelta

import httpx
from cryptography.fernet import Fernet
from django.conf import settings
from django.core import signing
from django.core.mail import EmailMessage
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from notifications.models import (
    Channel,
    Event,
    NotificationPreference,
    Webhook,
    WebhookDelivery,
    enabled_by_default,
)
from searchtweak import instruments, outbound
from searchtweak.models import User
from searchtweak.outbound_sending import TRANSIENT_ERRORS, RetryPolicy

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-SearchTweak-Signature"
TIMESTAMP_HEADER = "X-SearchTweak-Timestamp"
EVENT_HEADER = "X-SearchTweak-Event"
TEST_EVENT = "test"
_UNSUBSCRIBE_SALT = "searchtweak.notifications.unsubscribe"
# Answers worth another try: the receiver is overloaded, restarting or rate limiting.
_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


# --- the secret ------------------------------------------------------------------------------

def _fernet() -> Fernet:
    # As evaluations.crypto derives its keys (which this app may not import): from
    # SECRET_KEY, with a purpose of its own.
    digest = hashlib.sha256(b"searchtweak.webhook-secrets:" + settings.SECRET_KEY.encode())
    return Fernet(base64.urlsafe_b64encode(digest.digest()))


def secret_encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def secret_decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# --- webhook bodies and attempts ---------------------------------------------------------------

def absolute_url(url: str) -> str:
    return f"{settings.SITE_URL}{url}" if url.startswith("/") else url


def webhook_body(*, event: str, team_id: int, text: str, url: str = "",
                 payload: dict | None = None) -> str:
    """The body of a new delivery; each attempt sends it with its own `timestamp`."""
    link = absolute_url(url)
    return json.dumps({
        "event": event, "team": team_id,
        # Slack and Mattermost show `text`; their <url|label> form makes the link.
        "text": f"{text} <{link}|Open>" if link else text,
        "url": link, "payload": payload or {}, "timestamp": int(time.time()),
    }, separators=(",", ":"))


def _stamped(body: str, at: datetime) -> str:
    """`body` with `timestamp` set to `at` (whole seconds since the epoch)."""
    data = json.loads(body)
    data["timestamp"] = int(at.timestamp())
    return json.dumps(data, separators=(",", ":"))


def lease_seconds() -> float:
    """How long an attempt's claim holds: longer than an attempt can take (its deadline is
    twice the timeout, see _post), with a margin for the worker's own time."""
    return settings.WEBHOOK_TIMEOUT_SECONDS * 2 + 30.0


def retry_policy() -> RetryPolicy:
    return RetryPolicy(max_attempts=settings.WEBHOOK_MAX_ATTEMPTS,
                       backoff_seconds=settings.WEBHOOK_RETRY_BACKOFF_MS / 1000,
                       max_backoff_seconds=300.0, jitter=False,
                       max_retry_after_seconds=300.0)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "").strip()
    return float(value) if value.isdigit() else None


def _post(webhook: Webhook, delivery: WebhookDelivery
          ) -> tuple[int | None, int, str, bool, float | None]:
    """One attempt: (status code or None, latency in ms, error, worth retrying,
    Retry-After)."""
    body = delivery.body.encode()
    timestamp = str(json.loads(delivery.body)["timestamp"])
    headers = {**outbound.BASE_HEADERS, "Content-Type": "application/json",
               EVENT_HEADER: delivery.event, TIMESTAMP_HEADER: timestamp,
               SIGNATURE_HEADER: signature(secret_decrypt(webhook.secret_encrypted), body)}
    timeout = float(settings.WEBHOOK_TIMEOUT_SECONDS)
    started = time.monotonic()
    try:
        with outbound.new_client(timeout_seconds=timeout, connections=1) as client, \
                outbound.deadline(timeout * 2):
            response = outbound.send(client, httpx.Request("POST", webhook.url, headers=headers,
                                                           content=body))
            response.close()
    except outbound.RedirectRefused as error:
        return None, _since(started), str(error), False, None
    except httpx.InvalidURL as error:
        # Not retried: the URL will not parse next time either (a row saved before the
        # save checked it with this parser, outbound.url_problem).
        return None, _since(started), f"the HTTP client cannot read the URL: {error}", \
            False, None
    except httpx.HTTPError as error:
        refused = outbound.refusal(error)
        if refused is not None:
            return None, _since(started), str(refused), False, None
        retry = isinstance(error, (*TRANSIENT_ERRORS, httpx.TimeoutException))
        return None, _since(started), f"{type(error).__name__}: {error}"[:500], retry, None
    code = response.status_code
    if 200 <= code < 300:
        return code, _since(started), "", False, None
    return code, _since(started), f"the receiver answered {code}", code in _RETRY_STATUSES, \
        _retry_after(response)


def _since(started: float) -> int:
    return math.ceil((time.monotonic() - started) * 1000)


def webhook_delivery_attempt(*, delivery_id: int) -> float | None:
    """Make the next attempt of a pending delivery, if it is due and no other process holds
    one, and log it on the delivery. Returns the seconds to wait before the next attempt,
    or None when there is nothing more for this caller to do (sent, failed for good, no
    longer pending, not due yet, or another attempt in flight)."""
    delivery = _attempt_claim(delivery_id)
    if delivery is None:
        return None
    claimed_at, attempt = delivery.claimed_at, delivery.attempt_count
    if not delivery.webhook.active:
        code, latency, error, retry, retry_after = None, 0, "the webhook is inactive", False, None
    else:
        code, latency, error, retry, retry_after = _post(delivery.webhook, delivery)
    ok = code is not None and 200 <= code < 300
    wait = None if ok or not retry else retry_policy().wait_before_retry(
        attempt, retry_after=retry_after)
    status = (WebhookDelivery.Status.SENT if ok else WebhookDelivery.Status.PENDING
              if wait is not None else WebhookDelivery.Status.FAILED)
    now = timezone.now()
    # Only while this attempt's claim holds: one that lapsed and was taken over logs the
    # attempt that took it.
    WebhookDelivery.objects.filter(pk=delivery.pk, status=WebhookDelivery.Status.PENDING,
                                   claimed_at=claimed_at).update(
        status=status, status_code=code, latency_ms=latency, error=error[:500], claimed_at=None,
        next_attempt_at=now + timedelta(seconds=wait or 0),
        sent_at=now if status != WebhookDelivery.Status.PENDING else None)
    instruments.WEBHOOK_DELIVERIES.labels(
        "delivered" if ok else "retry" if wait is not None else "failed").inc()
    if status == WebhookDelivery.Status.FAILED:
        logger.warning("webhook delivery %s failed after %s attempts: %s", delivery.pk,
                       attempt, error)
    return wait


# A retry's message may run a little before the time the previous attempt wrote (the two
# clocks of worker and database host, a countdown's rounding).
_DUE_SLACK = timedelta(seconds=1)


def _attempt_claim(delivery_id: int) -> WebhookDelivery | None:
    """Claim the delivery's next attempt: the delivery with the attempt counted, stamped
    and its body timed now, or None when it is not this caller's to make. An attempt whose
    claim lapsed counts as made (it may have reached the receiver); after the last one the
    delivery fails."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(
        pk=delivery_id, status=WebhookDelivery.Status.PENDING).first()
    now = timezone.now()
    if delivery is None or delivery.next_attempt_at > now + _DUE_SLACK:
        return None
    lapsed = delivery.claimed_at is not None
    if lapsed and delivery.claimed_at > now - timedelta(seconds=lease_seconds()):
        return None  # in flight in another process
    current = WebhookDelivery.objects.filter(
        pk=delivery.pk, status=WebhookDelivery.Status.PENDING,
        attempt_count=delivery.attempt_count, claimed_at=delivery.claimed_at)
    if lapsed and delivery.attempt_count >= settings.WEBHOOK_MAX_ATTEMPTS:
        error = (f"attempt {delivery.attempt_count} never reported back (its worker stopped); "
                 "it was the last")
        if current.update(status=WebhookDelivery.Status.FAILED, claimed_at=None, error=error,
                          sent_at=now):
            logger.warning("webhook delivery %s failed: %s", delivery.pk, error)
        return None
    body = _stamped(delivery.body, now)
    if not current.update(attempt_count=delivery.attempt_count + 1, claimed_at=now, body=body):
        return None  # another process claimed it first
    delivery.attempt_count += 1
    delivery.claimed_at, delivery.body = now, body
    return delivery


def webhook_deliveries_stalled(*, overdue_seconds: float | None = None) -> list[int]:
    """The pending deliveries nobody is attempting though they should be: an attempt whose
    claim lapsed (its worker died), or an attempt overdue by `overdue_seconds` (default
    WEBHOOK_SWEEP_AFTER_SECONDS) with no claim (its message was lost, or never sent)."""
    now = timezone.now()
    overdue = settings.WEBHOOK_SWEEP_AFTER_SECONDS if overdue_seconds is None \
        else overdue_seconds
    return list(WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING).filter(
        Q(claimed_at__isnull=True, next_attempt_at__lt=now - timedelta(seconds=overdue))
        | Q(claimed_at__lt=now - timedelta(seconds=lease_seconds())),
    ).order_by("next_attempt_at").values_list("pk", flat=True)[:1000])


# --- mail ----------------------------------------------------------------------------------------

def unsubscribe_token(*, user_id: int, event: str) -> str:
    return signing.dumps({"u": user_id, "e": event}, salt=_UNSUBSCRIBE_SALT)


def unsubscribe_token_read(token: str) -> tuple[int, str] | None:
    """The (user id, event) a token names, or None for a token this server did not sign."""
    try:
        data = signing.loads(token, salt=_UNSUBSCRIBE_SALT)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or data.get("e") not in Event.values \
            or not isinstance(data.get("u"), int):
        return None
    return data["u"], data["e"]


def wants(*, user_id: int, event: str, channel: str) -> bool:
    row = NotificationPreference.objects.filter(user_id=user_id, event=event,
                                                channel=channel).first()
    return row.enabled if row is not None else enabled_by_default(event, channel)


def notification_mail_send(*, user_id: int, event: str, text: str, url: str = "") -> bool:
    """E-mail one user one notification, with a one-click unsubscribe link (in the body and
    as List-Unsubscribe); whether it went out. Asked again here: the user may have
    unsubscribed since the event. A failing mail server is logged, not raised."""
    user = User.objects.filter(pk=user_id, is_active=True).first()
    if user is None or not user.email or not wants(user_id=user_id, event=event,
                                                   channel=Channel.MAIL):
        return False
    unsubscribe = absolute_url(reverse("notifications:notification_unsubscribe", kwargs={
        "token": unsubscribe_token(user_id=user_id, event=event)}))
    preferences = absolute_url(reverse("notifications:notification_preferences"))
    lines = [text]
    if url:
        lines += ["", absolute_url(url)]
    lines += ["", "--",
              f"You get this because of your choice for “{Event(event).label}”.",
              f"Stop these e-mails with one click: {unsubscribe}",
              f"Choose what you receive: {preferences}"]
    message = EmailMessage(
        subject=f"[SearchTweak] {text}"[:200], body="\n".join(lines), to=[user.email],
        headers={"List-Unsubscribe": f"<{unsubscribe}>",
                 "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"})
    try:
        message.send()
    except OSError as error:
        logger.warning("notification mail to user %s failed: %s", user_id, error)
        return False
    return True
