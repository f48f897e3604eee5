"""Signing in through the fake provider's own login form, in Chromium."""

import re

import pytest
from playwright.sync_api import expect

from audit.models import Action, AuditEvent
from searchtweak.envvars import group_roles_parse
from tests.searchtweak.factories import TeamFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _through_the_provider(page, live_server, idp, *, passwords: bool = True) -> None:
    page.goto(f"{live_server.url}/")
    assert page.url.startswith(f"{live_server.url}/login/")
    expect(page.get_by_label("Password")).to_have_count(1 if passwords else 0)
    page.get_by_test_id("sso-login").click()
    page.wait_for_url(re.compile(re.escape(f"{idp.url}/authorize")))
    page.get_by_label("Username").fill("alice")
    page.get_by_role("button", name="Sign in at the IdP").click()


def test_a_person_signs_in_through_the_providers_form(page, live_server, idp, settings):
    acme = TeamFactory(name="Acme")
    settings.OIDC_GROUP_ROLES = group_roles_parse([f"search-leads={acme.pk}:lead"])
    settings.LOCAL_LOGIN = False
    idp.people["alice"].groups = ["search-leads"]
    _through_the_provider(page, live_server, idp, passwords=False)
    page.wait_for_url(f"{live_server.url}/")
    expect(page.get_by_role("heading", name="Welcome, Alice Liddell")).to_be_visible()
    expect(page.get_by_test_id("what-you-can-do")).to_contain_text("In Acme you are lead")
    assert AuditEvent.objects.filter(action=Action.SIGN_IN, actor_label="alice").count() == 1


def test_a_token_for_another_application_shows_the_refusal(page, live_server, idp):
    idp.tweaks["aud"] = "another-client"
    _through_the_provider(page, live_server, idp)
    expect(page.get_by_role("heading", name="Sign-in refused")).to_be_visible()
    expect(page.get_by_test_id("sso-refused")).to_contain_text("another application")
    page.get_by_role("link", name="Back to the login page").click()
    expect(page.get_by_test_id("sso-login")).to_be_visible()
