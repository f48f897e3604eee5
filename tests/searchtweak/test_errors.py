"""403 and 404 pages in the site's layout with their reason; JSON under /api/."""

import logging

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from evaluations.models import Endpoint
from searchtweak.models import Team

pytestmark = pytest.mark.django_db

MAIN_NAV = 'aria-label="Main"'
DEBUG_MODES = pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])


@DEBUG_MODES
def test_a_grader_opening_an_admin_page_sees_the_reason_in_the_layout(
        client, personas, settings, debug):
    settings.DEBUG = debug
    client.force_login(personas.grader)
    response = client.get(reverse("evaluations:endpoint_create"))
    assert response.status_code == 403
    html = response.content.decode()
    assert "<h1>Not allowed</h1>" in html
    assert "This needs the admin role." in html
    assert "Ask an owner or admin of your team if you need it." in html
    assert MAIN_NAV in html and ">grader · Grader</span>" in html


@DEBUG_MODES
def test_a_forbidden_post_changes_nothing_and_shows_the_reason(
        client, personas, settings, debug):
    settings.DEBUG = debug
    client.force_login(personas.grader)
    response = client.post(reverse("evaluations:endpoint_create"),
                           {"name": "Sneaky", "url": "http://127.0.0.1:9/"})
    assert response.status_code == 403
    assert "This needs the admin role." in response.content.decode()
    assert not Endpoint.objects.exists()


@DEBUG_MODES
def test_a_missing_object_answers_our_404_page(client, personas, settings, debug):
    settings.DEBUG = debug
    client.force_login(personas.owner)
    response = client.get(reverse("team_detail", args=[999_999]))
    assert response.status_code == 404
    html = response.content.decode()
    assert "<h1>Not found</h1>" in html and "No such team." in html
    assert MAIN_NAV in html
    assert "technical_404" not in html and "Django" not in html


@DEBUG_MODES
def test_another_teams_object_answers_the_same_404_page(client, personas, settings, debug):
    settings.DEBUG = debug
    client.force_login(personas.outsider)
    response = client.get(reverse("team_detail", args=[personas.team.pk]))
    assert response.status_code == 404
    assert "No such team." in response.content.decode()


@DEBUG_MODES
def test_an_anonymous_visitor_gets_the_404_page_without_the_nav(client, db, settings, debug):
    settings.DEBUG = debug
    response = client.get(reverse("invitation_detail", args=["no-such-token"]))
    assert response.status_code == 404
    html = response.content.decode()
    assert "<h1>Not found</h1>" in html and "No such invitation." in html
    assert MAIN_NAV not in html


def test_an_unrouted_url_answers_our_404_page_in_production(client, personas, settings):
    settings.DEBUG = False
    client.force_login(personas.owner)
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "<h1>Not found</h1>" in html and MAIN_NAV in html
    # The resolver's list of tried patterns is never shown.
    assert "tried" not in html


def test_the_api_keeps_json_errors(personas, settings):
    settings.DEBUG = True
    api = APIClient()
    api.force_authenticate(personas.grader)
    forbidden = api.post("/api/v1/endpoints/", {"team": personas.team.pk, "name": "x",
                                                "url": "http://127.0.0.1:9/"}, format="json")
    assert forbidden.status_code == 403
    assert forbidden.json() == {"detail": "This needs the admin role."}
    missing = api.get("/api/v1/endpoints/999999/")
    assert missing.status_code == 404 and missing["Content-Type"] == "application/json"
    settings.DEBUG = False
    assert api.get("/api/v1/endpoints/-3/").json() == {"detail": "Not found."}


def test_a_403_is_logged_as_one_line_without_a_traceback(client, personas, caplog):
    client.force_login(personas.grader)
    path = reverse("evaluations:endpoint_create")
    with caplog.at_level(logging.WARNING, logger="django.request"):
        client.get(path)
    records = [r for r in caplog.records if r.name == "django.request"]
    assert [r.getMessage() for r in records] == [
        f"Forbidden (403): GET {path} user={personas.grader.pk} "
        "reason=This needs the admin role."
    ]
    assert records[0].levelno == logging.WARNING
    assert records[0].exc_info is None and records[0].status_code == 403


def _request_log(caplog) -> list[tuple[str, int, object]]:
    return [(r.getMessage(), r.levelno, r.exc_info)
            for r in caplog.records if r.name == "django.request"]


def test_an_api_403_is_logged_as_one_line_with_user_and_reason(personas, caplog):
    api = APIClient()
    api.force_authenticate(personas.grader)
    with caplog.at_level(logging.INFO, logger="django.request"):
        response = api.post("/api/v1/endpoints/", {
            "team": personas.team.pk, "name": "x", "url": "http://127.0.0.1:9/"},
            format="json")
    assert response.status_code == 403
    assert _request_log(caplog) == [(
        f"Forbidden (403): POST /api/v1/endpoints/ user={personas.grader.pk} "
        "reason=This needs the admin role.", logging.WARNING, None)]


def test_an_api_request_without_credentials_is_logged_as_one_line(db, caplog):
    with caplog.at_level(logging.INFO, logger="django.request"):
        response = APIClient().get("/api/v1/endpoints/")
    assert response.status_code == 401
    assert _request_log(caplog) == [(
        "Unauthorized (401): GET /api/v1/endpoints/ user=- "
        "reason=Authentication credentials were not provided.", logging.WARNING, None)]


def test_an_api_request_with_a_bad_token_is_logged_as_one_line(db, caplog):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    with caplog.at_level(logging.INFO, logger="django.request"):
        response = api.get("/api/v1/me/")
    assert response.status_code == 401
    assert _request_log(caplog) == [(
        "Unauthorized (401): GET /api/v1/me/ user=- reason=Invalid or revoked token.",
        logging.WARNING, None)]


def test_a_stale_form_answers_our_403_page_saying_what_to_do(personas, caplog):
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(personas.grader)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = csrf_client.post(reverse("team_create"), {"name": "Stale"})
    assert response.status_code == 403
    html = response.content.decode()
    assert "This form had expired or was sent from another site" in html
    assert "Reload the page and try again." in html and MAIN_NAV in html
    assert "Ask an owner or admin" not in html  # no role would help here
    assert not Team.objects.filter(name="Stale").exists()
    messages = [r.getMessage() for r in caplog.records if r.name == "django.request"]
    assert len(messages) == 1 and messages[0].startswith(
        f"Forbidden (403): POST /teams/new/ user={personas.grader.pk} reason=This form had expired")
