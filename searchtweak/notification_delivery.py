"""How a notification leaves the app: a webhook delivery's attempts and a user's mail.

Both run in a worker (searchtweak.tasks), or on a background thread without a broker, so
a slow or broken receiver or mail server never holds up the process that announced the
event. A webhook body is JSON with a `text` field (what Slack and Mattermost incoming
webhooks show) and its `timestamp`; `X-SearchTweak-Signature: sha256=<hex>` is the
HMAC-SHA256 of the raw body with the webhook's secret, and `X-SearchTweak-Timestamp`
repeats the body's timestamp, so a receiver can refuse an old body replayed.
"""

import base64
import hashlib
import hmac
import json
import logging
import math
import time

import httpx
from cryptography.fernet import Fernet
from django.conf import settings
from django.core import signing
from django.core.mail import EmailMessage
from django.urls import reverse
from django.utils import timezone

from searchtweak import outbound
from searchtweak.models import User
from searchtweak.notification_models import (
    Channel,
    Event,
    NotificationPreference,
    Webhook,
    WebhookDelivery,
    enabled_by_default,
)
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
    # As evaluations.crypto derives its keys (which searchtweak may not import): from
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
    link = absolute_url(url)
    return json.dumps({
        "event": event, "team": team_id,
        # Slack and Mattermost show `text`; their <url|label> form makes the link.
        "text": f"{text} <{link}|Open>" if link else text,
        "url": link, "payload": payload or {}, "timestamp": int(time.time()),
    }, separators=(",", ":"))


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
    timestamp = str(json.loads(delivery.body).get("timestamp", ""))
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
    """Make the next attempt of a pending delivery and log it on the delivery. Returns the
    seconds to wait before the next attempt, or None when the delivery is over (sent,
    failed for good, or no longer pending)."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(
        pk=delivery_id, status=WebhookDelivery.Status.PENDING).first()
    if delivery is None:
        return None
    attempt = delivery.attempt_count + 1
    if not delivery.webhook.active:
        code, latency, error, retry, retry_after = None, 0, "the webhook is inactive", False, None
    else:
        code, latency, error, retry, retry_after = _post(delivery.webhook, delivery)
    ok = code is not None and 200 <= code < 300
    wait = None if ok or not retry else retry_policy().wait_before_retry(
        attempt, retry_after=retry_after)
    status = (WebhookDelivery.Status.SENT if ok else WebhookDelivery.Status.PENDING
              if wait is not None else WebhookDelivery.Status.FAILED)
    WebhookDelivery.objects.filter(pk=delivery.pk, status=WebhookDelivery.Status.PENDING).update(
        attempt_count=attempt, status=status, status_code=code, latency_ms=latency,
        error=error[:500], sent_at=timezone.now() if status != WebhookDelivery.Status.PENDING
        else None)
    if status == WebhookDelivery.Status.FAILED:
        logger.warning("webhook delivery %s failed after %s attempts: %s", delivery.pk,
                       attempt, error)
    return wait


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
    unsubscribe = absolute_url(reverse("notification_unsubscribe", kwargs={
        "token": unsubscribe_token(user_id=user_id, event=event)}))
    lines = [text]
    if url:
        lines += ["", absolute_url(url)]
    lines += ["", "--",
              f"You get this because of your choice for “{Event(event).label}”.",
              f"Stop these e-mails with one click: {unsubscribe}",
              f"Choose what you receive: {absolute_url(reverse('notification_preferences'))}"]
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
