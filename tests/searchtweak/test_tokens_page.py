"""The API tokens page in the user's settings: create (key shown once), list, revoke."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from searchtweak.models import ApiToken, hash_token_key

pytestmark = pytest.mark.django_db


def test_creating_a_token_shows_its_key_once_and_the_key_works(client, personas):
    client.force_login(personas.grader)
    response = client.post(reverse("api_tokens"), {"name": "CI on main"})
    assert response.status_code == 302 and response.url == reverse("api_tokens")
    page = client.get(reverse("api_tokens"))
    key = page.context["new_token"]["key"]
    token = ApiToken.objects.get(user=personas.grader)
    assert (token.name, token.key_hash, token.key_prefix) == (
        "CI on main", hash_token_key(key), key[:8])
    assert key in page.content.decode()
    again = client.get(reverse("api_tokens")).content.decode()
    assert key not in again and f"{key[:8]}…" in again
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/me/").json()["username"] == "grader"


def test_a_blank_name_is_refused_and_creates_nothing(client, personas):
    client.force_login(personas.grader)
    response = client.post(reverse("api_tokens"), {"name": "   "})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_revoking_stops_the_token(client, personas):
    client.force_login(personas.grader)
    client.post(reverse("api_tokens"), {"name": "laptop"})
    key = client.get(reverse("api_tokens")).context["new_token"]["key"]
    token = ApiToken.objects.get()
    url = reverse("api_token_revoke", args=[token.pk])
    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/me/").status_code == 401
    assert "revoked" in client.get(reverse("api_tokens")).content.decode()


def test_nobody_else_can_revoke_or_see_a_token(client, personas):
    client.force_login(personas.grader)
    client.post(reverse("api_tokens"), {"name": "mine"})
    token = ApiToken.objects.get()
    client.force_login(personas.owner)
    assert client.post(reverse("api_token_revoke", args=[token.pk])).status_code == 404
    assert "mine" not in client.get(reverse("api_tokens")).content.decode()
    token.refresh_from_db()
    assert token.revoked_at is None


def test_the_page_needs_a_login(client):
    response = client.get(reverse("api_tokens"))
    assert response.status_code == 302 and "/login/" in response.url
