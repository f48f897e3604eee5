"""The shared view and API steps (searchtweak.views_shared, searchtweak.api_shared) and the
one fetch-or-404 of the access functions (access.row_get_for_user), tried alone; every
page and API view that uses them is tried through its own tests and the access matrix."""

import pytest
from django import forms
from django.contrib.messages import get_messages
from django.contrib.messages.storage.cookie import CookieStorage
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.test import RequestFactory

from searchtweak import access
from searchtweak.api_shared import delete_or_keep_response
from searchtweak.models import Membership, Role
from searchtweak.views_shared import form_saved_response, service_step_response
from tests.searchtweak.factories import TeamFactory

pytestmark = pytest.mark.django_db


def _request(method: str = "post", data: dict | None = None):
    request = getattr(RequestFactory(), method)("/", data or {})
    request._messages = CookieStorage(request)
    return request


def _flashed(request) -> list[tuple[str, str]]:
    return [(message.level_tag, message.message) for message in get_messages(request)]


def test_row_get_for_user_applies_the_team_rule_to_the_row_it_loads(personas):
    rows = Membership.objects.all()
    row = personas.grader.memberships.get()
    assert access.row_get_for_user(rows, user=personas.owner, pk=row.pk, what="member") == row
    for user, pk in ((personas.owner, 999_999), (personas.outsider, row.pk)):
        with pytest.raises(Http404, match=r"^No such member\.$"):
            access.row_get_for_user(rows, user=user, pk=pk, what="member")
    with pytest.raises(PermissionDenied, match=r"^This needs the admin role\.$"):
        access.row_get_for_user(rows, user=personas.grader, pk=row.pk, what="member",
                                minimum_role=Role.ADMIN)


def test_row_get_for_user_reads_the_team_where_team_id_of_says(personas):
    other_team = TeamFactory()
    row = personas.grader.memberships.get()
    with pytest.raises(Http404, match=r"^No such member\.$"):
        access.row_get_for_user(Membership.objects.all(), user=personas.owner, pk=row.pk,
                                what="member", team_id_of=lambda _: other_team.pk)


def test_service_step_flashes_the_refusal_and_goes_where_refusals_go():
    def refuse() -> None:
        raise ValidationError({"status": "Pause it first."})

    request = _request()
    response = service_step_response(request, refuse, done="Done.", next_url="/list/",
                                     refused_prefix="It was not done: ",
                                     refused_url="/detail/")
    assert (response.status_code, response["Location"]) == (302, "/detail/")
    assert _flashed(request) == [("error", "It was not done: Pause it first.")]


def test_service_step_flashes_done_and_goes_on():
    calls = []
    request = _request()
    response = service_step_response(request, lambda: calls.append(1), done="Done.",
                                     next_url="/list/", refused_url="/detail/")
    assert (response.status_code, response["Location"], calls) == (302, "/list/", [1])
    assert _flashed(request) == [("success", "Done.")]


class _NameForm(forms.Form):
    name = forms.CharField()


def test_form_saved_puts_the_service_refusal_on_the_form_and_redirects_nowhere():
    def refuse() -> None:
        raise ValidationError({"name": "Taken."})

    request = _request(data={"name": "a"})
    form = _NameForm(request.POST)
    assert form_saved_response(request, form, refuse, success=str, next_url="/x/") is None
    assert form.errors == {"name": ["Taken."]}
    assert _flashed(request) == []


def test_form_saved_calls_nothing_on_a_get_or_an_invalid_form():
    def save() -> None:
        raise AssertionError("the service must not run")

    for request, data in ((_request("get"), None), (_request(data={}), {})):
        form = _NameForm(data)
        assert form_saved_response(request, form, save, success=str, next_url="/x/") is None


def test_form_saved_flashes_the_result_and_redirects_from_it():
    request = _request(data={"name": "a"})
    response = form_saved_response(
        request, _NameForm(request.POST), lambda: 7, success=lambda n: f"Saved {n}.",
        next_url=lambda n: f"/rows/{n}/")
    assert (response.status_code, response["Location"]) == (302, "/rows/7/")
    assert _flashed(request) == [("success", "Saved 7.")]


def test_api_delete_or_keep_answers_204_or_the_kept_row():
    assert delete_or_keep_response(True, lambda: {"id": 1}).status_code == 204
    kept = delete_or_keep_response(False, lambda: {"id": 1})
    assert (kept.status_code, kept.data) == (200, {"id": 1})
