"""The evaluation page warns when no member carries all of its grader routing tags."""

import pytest
from django.test import Client

from evaluations.models import Evaluation
from judgments.grader_tags import grader_tags_set
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db

WARNING = 'data-testid="routing-warning"'


def page_of(user, evaluation) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/evaluations/{evaluation.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_it_warns_that_nobody_carries_all_routing_tags(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1,
                                       tags=["DE", "fashion"])
    grader_tags_set(team=personas.team, user=personas.grader, tags=["de"])
    html = page_of(personas.admin, evaluation)
    assert WARNING in html
    assert ("No grader carries all of the routing tags <code>de</code>, <code>fashion</code>:"
            in html)
    assert "nobody will be handed these results." in html
    assert 'Tag graders under <a href="/grader-tags/">Grader tags</a>.' in html
    assert "<dt>Grader routing tags</dt>" in html


def test_a_lead_sees_the_warning_without_the_admin_link(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, tags=["de"])
    html = page_of(personas.lead, evaluation)
    assert WARNING in html and 'href="/grader-tags/"' not in html


def test_it_does_not_warn_once_a_member_carries_every_tag(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1,
                                       tags=["DE", "fashion"])
    grader_tags_set(team=personas.team, user=personas.grader, tags=["fashion", "de"])
    assert WARNING not in page_of(personas.admin, evaluation)


def test_it_does_not_warn_without_routing_tags_or_once_finished(personas):
    untagged = evaluation_with_slots(personas.team, keywords=1, positions=1)
    finished = evaluation_with_slots(personas.team, keywords=1, positions=1, tags=["de"],
                                     status=Evaluation.Status.FINISHED)
    assert WARNING not in page_of(personas.admin, untagged)
    assert WARNING not in page_of(personas.admin, finished)


def test_the_evaluation_form_calls_them_grader_routing_tags(personas):
    client = Client()
    client.force_login(personas.lead)
    html = client.get("/evaluations/new/").content.decode()
    assert ">Grader routing tags:</label>" in html
    assert ("Only graders carrying all of these tags get this evaluation&#x27;s results"
            in html)
