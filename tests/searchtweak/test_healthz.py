import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


@override_settings(CELERY_TASK_ALWAYS_EAGER=True)
def test_healthz_reports_database_and_eager_broker(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "eager", "workers": "eager",
                               "status": "ok"}


# Port 9 (discard) on loopback has no listener here: a real refused connection.
@override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL="redis://127.0.0.1:9/0")
def test_healthz_is_503_when_the_broker_is_unreachable(client):
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["database"] == "ok"
    assert body["broker"].startswith("error: ")
    assert body["status"] == "error"
