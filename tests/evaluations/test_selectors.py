"""The access function of each evaluations object type, tried by every role and an outsider."""

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from evaluations import selectors
from searchtweak.models import Role
from tests.evaluations.factories import KeywordFactory

pytestmark = pytest.mark.django_db

RANKED = [Role.GRADER, Role.LEAD, Role.ADMIN, Role.OWNER]


def _objects(team) -> dict:
    """Each access function with the id keyword it takes and the row of `team` it finds."""
    keyword = KeywordFactory(evaluation__model__endpoint__team=team)
    evaluation = keyword.evaluation
    return {
        "endpoint": (selectors.endpoint_get_for_user, "endpoint_id", evaluation.model.endpoint),
        "search model": (selectors.search_model_get_for_user, "model_id", evaluation.model),
        "evaluation": (selectors.evaluation_get_for_user, "evaluation_id", evaluation),
        "keyword": (selectors.keyword_get_for_user, "keyword_id", keyword),
    }


@pytest.mark.parametrize("persona", ["owner", "admin", "lead", "grader"])
def test_each_object_is_its_teams_with_the_role_and_a_403_naming_it_below(personas, persona):
    user = getattr(personas, persona)
    held = user.memberships.get().role
    for what, (get, id_name, row) in _objects(personas.team).items():
        for minimum_role in RANKED:
            if RANKED.index(held) >= RANKED.index(minimum_role):
                assert get(user=user, **{id_name: row.pk}, minimum_role=minimum_role) == row
            else:
                with pytest.raises(PermissionDenied) as caught:
                    get(user=user, **{id_name: row.pk}, minimum_role=minimum_role)
                assert str(caught.value) == f"This needs the {minimum_role} role.", what


def test_each_object_is_404_alike_for_an_outsider_and_when_missing(personas):
    for what, (get, id_name, row) in _objects(personas.team).items():
        # The outsider owns a team of their own; it opens nothing of this one.
        for user, row_id in ((personas.outsider, row.pk), (personas.owner, 999_999)):
            with pytest.raises(Http404) as caught:
                get(user=user, **{id_name: row_id})
            assert str(caught.value) == f"No such {what}."
