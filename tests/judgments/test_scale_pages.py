"""The admins' scale and transformer forms: help that renders, rows that follow the source."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_scale_form_help_shows_its_example_as_code(personas):
    html = client_for(personas.admin).get("/scales/new/").content.decode()
    assert "<code>1 Bad #d92d20</code>" in html
    assert "&lt;code&gt;" not in html
