import time
from functools import partial

from celery import shared_task

from notifications import delivery
from searchtweak.background import BackgroundThreads, background_run
from searchtweak.celery import app


@shared_task(name="searchtweak.webhook_deliver", time_limit=120, soft_time_limit=100)
def webhook_deliver(delivery_id: int) -> None:
    """The next attempt of a webhook delivery. With a broker a retry is a new message sent
    with the backoff as its countdown, so a receiver that is down holds no worker while it
    waits; without one (eagerly, or on a background thread) this waits and tries again."""
    while True:
        wait = delivery.webhook_delivery_attempt(delivery_id=delivery_id)
        if wait is None:
            return
        if not app.conf.task_always_eager:
            webhook_deliver.apply_async((delivery_id,), countdown=wait)
            return
        time.sleep(wait)


@shared_task(name="searchtweak.sweep_stalled_webhook_deliveries", time_limit=60)
def sweep_stalled_webhook_deliveries() -> int:
    """Re-send the deliveries whose attempt's worker died or whose message was lost (beat);
    how many were sent on."""
    return webhook_deliveries_sweep_body()


def webhook_deliveries_sweep_body() -> int:
    """The sweep itself: beat's task calls it, and without a broker (make run) a thread of
    the web process does (searchtweak.background.periodic_register)."""
    stalled = delivery.webhook_deliveries_stalled()
    webhook_deliveries_dispatch(stalled)
    return len(stalled)


@shared_task(name="searchtweak.notification_mail", time_limit=60)
def notification_mail(user_id: int, event: str, text: str, url: str) -> bool:
    return delivery.notification_mail_send(user_id=user_id, event=event, text=text, url=url)


# Without a broker, deliveries and mails go to threads of the process that announced the
# event (searchtweak.background), so a slow receiver never holds up a request or grading.
_background = BackgroundThreads("embedded-notify", workers=2)


def webhook_deliveries_dispatch(delivery_ids: list[int]) -> None:
    for delivery_id in delivery_ids:
        _background.send(webhook_deliver, delivery_id, background=partial(
            background_run, partial(webhook_deliver, delivery_id),
            what=f"webhook delivery {delivery_id}"))


def notification_mails_dispatch(*, user_ids: list[int], event: str, text: str,
                                url: str) -> None:
    for user_id in user_ids:
        _background.send(notification_mail, user_id, event, text, url, background=partial(
            background_run, partial(notification_mail, user_id, event, text, url),
            what=f"a notification mail to user {user_id}"))
