"""Regressions schemathesis found: inputs that used to answer 500 or an HTML 404."""

import pytest
from rest_framework.test import APIClient

from evaluations.models import Endpoint, Evaluation

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize("path", ["/api/v1/evaluations/", "/api/v1/models/",
                                  "/api/v1/endpoints/"])
def test_a_body_that_is_not_an_object_answers_400(personas, path):
    response = client_for(personas.owner).post(path, '"just a string"',
                                               content_type="application/json")
    assert response.status_code == 400 and "non_field_errors" in response.json()
    assert not Evaluation.objects.exists() and not Endpoint.objects.exists()


def test_ids_beyond_64_bits_answer_404(personas):
    client = client_for(personas.owner)
    huge = 10**30
    assert client.get(f"/api/v1/endpoints/{huge}/").status_code == 404
    response = client.post("/api/v1/models/", {"team": huge, "endpoint": 1, "name": "m"},
                           format="json")
    # SQLite cannot compare such an id, PostgreSQL finds no row: 404 either way.
    assert response.status_code == 404 and "detail" in response.json()


def test_unrouted_api_urls_answer_json_404(personas):
    response = client_for(personas.owner).get("/api/v1/endpoints/-3/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}
