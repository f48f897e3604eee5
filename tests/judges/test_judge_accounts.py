"""A judge's service account is a team member only so that its grades fill slots: the team
pages neither list it nor let anyone change its role, remove it or tag it."""

import pytest
from django.test import Client

from searchtweak.models import Membership
from searchtweak.selectors import team_members
from tests.judges.builders import judge_with_account
from tests.searchtweak.factories import PASSWORD

pytestmark = pytest.mark.django_db


def test_team_pages_leave_judge_accounts_alone(personas):
    judge = judge_with_account(personas.team, name="Sage")
    people = {m.user.username for m in team_members(team=personas.team)}
    assert people == {"owner", "admin", "lead", "grader"}

    owner = Client()
    assert owner.login(username="owner", password=PASSWORD)
    membership = Membership.objects.get(user=judge.user)
    page = owner.get(f"/teams/{personas.team.pk}/").content.decode()
    assert judge.user.username not in page
    tags_page = owner.get("/grader-tags/").content.decode()
    assert judge.user.username not in tags_page
    assert owner.post(f"/grader-tags/{judge.user.pk}/", {"tags": "de"}).status_code == 404
    assert owner.post(f"/memberships/{membership.pk}/role/", {"role": "admin"}).status_code == 404
    assert owner.post(f"/memberships/{membership.pk}/remove/").status_code == 404
    assert Membership.objects.filter(pk=membership.pk, role="grader").exists()
