"""The steps the HTML views of every app share, written once: the current team a page
works on, saving a form through its service, and the confirm, delete-or-keep and
service steps (archive, restore, delete) of one row.

Who may act is still searchtweak.access's (through the per-object access functions) and
what happens is still the service's: these carry only the view's part, the message and
where the browser goes next, so a page's wording and redirects stay as they were while a
rule about them lives in one place. The API's counterparts are in searchtweak.api_shared.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.forms import BaseForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from searchtweak import access
from searchtweak.forms import add_service_errors
from searchtweak.models import Role, Team

T = TypeVar("T")


def current_team(request: HttpRequest, minimum_role: str = Role.GRADER,
                 reason: str = "") -> Team:
    """The team a page works on (the user's current one) once the user holds
    `minimum_role` there: where every "create in a team" page starts."""
    return access.current_team_access(user=request.user, minimum_role=minimum_role,
                                      reason=reason).team


def current_team_can(request: HttpRequest, team_id: int, role: str) -> bool:
    """For a page's buttons: access.current_team_can for the request's user."""
    return access.current_team_can(user=request.user, team_id=team_id, minimum_role=role)


def form_saved_response(request: HttpRequest, form: BaseForm, save: Callable[[], T], *,
                        success: Callable[[T], str],
                        next_url: str | Callable[[T], str]) -> HttpResponse | None:
    """On a POST whose form is valid: `save()` (one service call), flash `success(result)`
    and redirect to `next_url` (a URL, a URL name, or built from the result). None when
    there is nothing to redirect to: a GET, an invalid form, or a service that refused
    (its ValidationError is on the form), for the caller to render the form again."""
    if request.method != "POST" or not form.is_valid():
        return None
    try:
        result = save()
    except ValidationError as error:
        add_service_errors(form, error)
        return None
    messages.success(request, success(result))
    return redirect(next_url(result) if callable(next_url) else next_url)


def confirm_page(request: HttpRequest, *, title: str, dependents: str, consequence: str,
                 button: str, cancel_url: str, danger: bool = False) -> HttpResponse:
    """The page a destructive action's GET shows; its form POSTs to the same address.
    No button when there is nothing to do (button="")."""
    return render(request, "evaluations/confirm.html", {
        "title": title, "dependents": dependents, "consequence": consequence,
        "button": button, "danger": danger, "cancel_url": cancel_url,
    })


@dataclass(frozen=True)
class DeleteWording:
    """What the confirm page of a delete-or-keep says in each of its three states: a row
    nothing uses is deleted; a used one is kept instead (archived, deactivated); a used
    one kept already cannot go further. `delete` and `keep` are (consequence, button)."""

    delete: tuple[str, str]
    keep: tuple[str, str]
    kept_already: str


def delete_confirm_page(request: HttpRequest, *, title: str, dependents: str, used: bool,
                        kept: bool, wording: DeleteWording, cancel_url: str) -> HttpResponse:
    """The GET of a delete-or-keep (the service decides which on POST, by the same
    `used`); only deleting for good is styled as danger."""
    if not used:
        consequence, button = wording.delete
    elif not kept:
        consequence, button = wording.keep
    else:
        consequence, button = wording.kept_already, ""
    return confirm_page(request, title=title, dependents=dependents,
                        consequence=consequence, button=button, danger=not used,
                        cancel_url=cancel_url)


def delete_or_keep_response(request: HttpRequest, delete: Callable[[], bool], *,
                            deleted: str, kept: str, next_url: str) -> HttpResponse:
    """The POST of a delete-or-keep: `delete()` is the service, which deletes an unused row
    (True) and keeps a used one (False); the message says which happened."""
    messages.success(request, deleted if delete() else kept)
    return redirect(next_url)


def service_step_response(request: HttpRequest, step: Callable[[], object], *, done: str,
                            next_url: str, refused_prefix: str = "",
                            refused_url: str | None = None) -> HttpResponse:
    """POST of one service that may refuse (archive, restore, delete, set…): `done`
    flashed and on to `next_url`, or the service's refusal (ValidationError) flashed after
    `refused_prefix` and on to `refused_url` (default `next_url`)."""
    try:
        step()
    except ValidationError as error:
        messages.error(request, f"{refused_prefix}{' '.join(error.messages)}")
        return redirect(refused_url or next_url)
    messages.success(request, done)
    return redirect(next_url)
