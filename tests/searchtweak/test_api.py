import pytest
from rest_framework.test import APIClient

from searchtweak.models import ApiToken, Invitation, Team
from searchtweak.services import api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    _, key = api_token_create(user=user, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_requests_without_a_token_are_401():
    response = APIClient().get("/api/v1/me/")
    assert response.status_code == 401


def test_me_describes_the_caller(personas):
    response = token_client(personas.lead).get("/api/v1/me/")
    assert response.status_code == 200
    body = response.json()
    assert body["username"] == "lead"
    assert body["current_team"] == personas.team.pk
    assert body["memberships"] == [{"team": personas.team.pk, "team_name": "Acme", "role": "lead"}]


def test_a_revoked_token_is_refused(personas):
    token, key = api_token_create(user=personas.lead, name="old")
    api_token_revoke(token=token)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/v1/me/").status_code == 401


def test_token_use_is_recorded(personas):
    client = token_client(personas.lead)
    client.get("/api/v1/me/")
    assert ApiToken.objects.get(user=personas.lead).last_used_at is not None


def test_only_the_hash_of_a_token_is_stored(personas):
    token, key = api_token_create(user=personas.lead, name="x")
    assert key not in (token.key_hash, token.key_prefix)
    assert token.key_prefix == key[:8]


def test_session_auth_works_for_the_browser(client, personas):
    client.force_login(personas.grader)
    assert client.get("/api/v1/me/").json()["username"] == "grader"


def test_team_detail_is_404_outside_the_callers_teams(personas):
    url = f"/api/v1/teams/{personas.team.pk}/"
    assert token_client(personas.outsider).get(url).status_code == 404
    body = token_client(personas.grader).get(url).json()
    assert [m["username"] for m in body["members"]] == ["admin", "grader", "lead", "owner"]


def test_team_create_validates_and_names_the_field(personas):
    client = token_client(personas.grader)
    response = client.post("/api/v1/teams/", {"name": ""}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()
    response = client.post("/api/v1/teams/", {"name": "API team"}, format="json")
    assert response.status_code == 201
    assert Team.objects.get(pk=response.json()["id"]).name == "API team"


def test_service_validation_errors_become_400_naming_the_field(personas):
    # invitation_create refuses an owner invitation by an admin: a service-level rule.
    client = token_client(personas.admin)
    response = client.post(f"/api/v1/teams/{personas.team.pk}/invitations/",
                           {"invitee": "x@example.test", "role": "owner"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"role": ["You cannot invite someone to a role above your own."]}
    assert not Invitation.objects.exists()


def test_invitation_create_returns_the_link(personas):
    response = token_client(personas.owner).post(
        f"/api/v1/teams/{personas.team.pk}/invitations/",
        {"invitee": "x@example.test", "role": "lead"}, format="json",
    )
    assert response.status_code == 201
    invitation = Invitation.objects.get()
    assert response.json()["link"] == f"http://testserver/invitations/{invitation.token}/"


def test_grader_cannot_invite_through_the_api(personas):
    response = token_client(personas.grader).post(
        f"/api/v1/teams/{personas.team.pk}/invitations/", {"invitee": "x"}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["detail"] == "This needs the admin role."


def test_schema_and_docs_are_served(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/v1/me/" in paths
    assert "/api/v1/teams/{team_id}/invitations/" in paths
    assert "TokenAuth" in str(schema.json()["components"]["securitySchemes"]) or \
        "tokenAuth" in schema.json()["components"]["securitySchemes"]
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()
