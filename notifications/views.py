"""The notification pages: the bell (a fragment every page loads after it renders, so no
page pays a query for it), the list, the user's choices, the one-click unsubscribe, and
a team's webhooks."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from notifications import services
from notifications.models import Channel, Event
from searchtweak.forms import add_service_errors

PAGE_SIZE = 25


@require_GET
@login_required
def bell(request: HttpRequest) -> HttpResponse:
    return render(request, "notifications/_bell.html",
                  {"unread_count": services.unread_count(user=request.user)})


@require_GET
@login_required
def notification_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(services.notifications_of_user(user=request.user),
                     PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "notifications/list.html", {"page": page})


@require_POST
@login_required
def notification_read(request: HttpRequest, notification_id: int) -> HttpResponse:
    notification = services.notification_get_for_user(
        user=request.user, notification_id=notification_id)
    services.notification_mark_read(notification=notification)
    return redirect("notifications:notification_list")


@require_POST
@login_required
def notification_read_all(request: HttpRequest) -> HttpResponse:
    count = services.notifications_mark_all_read(user=request.user)
    messages.success(request, f"{count} marked read.")
    return redirect("notifications:notification_list")


@require_http_methods(["GET", "POST"])
@login_required
def notification_preferences(request: HttpRequest) -> HttpResponse:
    """A table of events by channels; a box ticked is a channel the user gets it on."""
    if request.method == "POST":
        enabled = {(event, channel) for event in Event.values for channel in Channel.values
                   if request.POST.get(f"{event}:{channel}")}
        services.preferences_save(user=request.user, enabled=enabled)
        messages.success(request, "Your notification choices were saved.")
        return redirect("notifications:notification_preferences")
    chosen = services.preferences_of_user(user=request.user)
    rows = [{"event": event, "label": label,
             "cells": [{"name": f"{event}:{channel}", "channel": channel_label,
                        "checked": chosen[(event, channel)]}
                       for channel, channel_label in Channel.choices]}
            for event, label in Event.choices]
    return render(request, "notifications/preferences.html",
                  {"rows": rows, "channels": Channel.labels})


# A mail client's one-click unsubscribe (RFC 8058) POSTs without a session or a CSRF
# token: the signed token is the authority, and all it can do is turn mails off.
@csrf_exempt
@require_http_methods(["GET", "POST"])
def notification_unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    target = services.unsubscribe_target(token=token)
    if target is None:
        return render(request, "notifications/unsubscribe.html",
                      {"invalid": True}, status=400)
    user, event = target
    done = False
    if request.method == "POST":
        services.unsubscribe(token=token)
        done = True
    return render(request, "notifications/unsubscribe.html", {
        "token": token, "event_label": Event(event).label, "done": done,
        "username": user.username})


# --- a team's webhooks ---


class WebhookForm(forms.Form):
    url = forms.CharField(max_length=500, label="URL",
                          widget=forms.URLInput(attrs={"placeholder": "https://hooks.example.com/…"}))
    events = forms.MultipleChoiceField(choices=Event.choices,
                                       widget=forms.CheckboxSelectMultiple)


_NEW_SECRET_KEY = "searchtweak_new_webhook_secret"


@require_http_methods(["GET", "POST"])
@login_required
def team_webhooks(request: HttpRequest, team_id: int) -> HttpResponse:
    """The team's webhooks and a form for a new one; its secret is shown once, on the page
    after creation. The session keeps only the new webhook's id for that one GET, never
    the secret (a session row is readable by whoever reads the database): the page reads
    it from the webhook's encrypted column."""
    team = services.team_for_webhooks(user=request.user, team_id=team_id)
    form = WebhookForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            webhook, _ = services.webhook_create(
                team=team, created_by=request.user, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            request.session[_NEW_SECRET_KEY] = webhook.pk
            return redirect("notifications:team_webhooks", team_id=team.pk)
    new_id = request.session.pop(_NEW_SECRET_KEY, None)
    return render(request, "notifications/webhooks.html", {
        "team": team, "form": form, "webhooks": services.webhooks_of_team(team=team),
        "new_secret": services.webhook_new_secret(team=team, webhook_id=new_id)
        if isinstance(new_id, int) else None,
    }, status=400 if form.errors else 200)


@require_GET
@login_required
def webhook_detail(request: HttpRequest, webhook_id: int) -> HttpResponse:
    webhook = services.webhook_get_for_user(user=request.user, webhook_id=webhook_id)
    return render(request, "notifications/webhook_detail.html", {
        "webhook": webhook, "deliveries": services.webhook_deliveries(webhook=webhook)})


@require_POST
@login_required
def webhook_test(request: HttpRequest, webhook_id: int) -> HttpResponse:
    webhook = services.webhook_get_for_user(user=request.user, webhook_id=webhook_id)
    services.webhook_test_send(webhook=webhook, user=request.user)
    messages.success(request, "A test was sent; its delivery shows below.")
    return redirect("notifications:webhook_detail", webhook_id=webhook.pk)


@require_POST
@login_required
def webhook_delete(request: HttpRequest, webhook_id: int) -> HttpResponse:
    webhook = services.webhook_get_for_user(user=request.user, webhook_id=webhook_id)
    team_id = webhook.team_id
    services.webhook_delete(webhook=webhook)
    messages.success(request, "The webhook was deleted.")
    return redirect("notifications:team_webhooks", team_id=team_id)
