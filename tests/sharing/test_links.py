"""Share links: made by a lead, read by anyone holding them, closed by time or a lead."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from audit.models import Action, AuditEvent
from searchtweak.models import Role
from sharing import tokens
from sharing.models import ShareLink
from sharing.services import share_link_create, share_link_revoke
from tests.judgments.builders import evaluation_with_slots
from tests.judgments.visibility_data import SECOND_GRADER, SECOND_NOTE, independent_grading
from tests.searchtweak.factories import TeamFactory, member

pytestmark = pytest.mark.django_db


@pytest.fixture
def shared(client):
    team = TeamFactory(name="Acme")
    lead = member(team, Role.LEAD, "lead-q7z")
    grading = independent_grading(team, member(team, Role.GRADER, "grader-q7z"))
    link, token = share_link_create(evaluation=grading.evaluation, created_by=lead, days=7)
    return lead, grading, link, token


def test_it_keeps_a_keyed_hash_not_the_token(shared):
    _, _, link, token = shared
    secret = token.split(".", 1)[1]
    assert token == f"{link.pk}.{secret}"
    assert len(secret) >= 43  # 32 random bytes
    assert secret not in link.token_hash
    assert link.token_hash == tokens.secret_hash(secret)
    assert tokens.secret_hash(secret) != tokens.secret_hash(secret + "x")


def test_the_visitor_sees_the_dashboard_without_names_or_grades(client, shared):
    _, grading, _, token = shared
    response = client.get(reverse("sharing:shared", args=[token]))
    body = response.content.decode()
    assert response.status_code == 200
    assert grading.evaluation.name in body
    assert 'data-testid="metric-cards"' in body
    for marker in (SECOND_GRADER, SECOND_NOTE, "grader-q7z", "lead-q7z",
                   grading.evaluation.model.endpoint.url):
        assert marker not in body, marker
    # No way out of the page: no nav, no link to another page of the app.
    assert 'class="mainnav"' not in body
    assert 'href="/' not in body.replace('href="/static/', "")
    assert response["Referrer-Policy"] == "no-referrer"
    assert response["Cache-Control"] == "private, no-store"


def test_a_signed_in_owner_gets_the_same_page_as_a_stranger(client, shared):
    lead, _, _, token = shared
    url = reverse("sharing:shared", args=[token])
    stranger = client.get(url).content.decode()
    client.force_login(lead)
    signed_in = client.get(url).content.decode()
    # The lead sees every grade on the dashboard itself; through the link, nobody's.
    assert SECOND_GRADER not in signed_in and SECOND_NOTE not in signed_in
    assert 'class="mainnav"' not in signed_in
    assert len(signed_in) == len(stranger)


@pytest.mark.parametrize("token", ["", "x", "abc.def", "99999.secret", ".secret", "1."])
def test_a_token_naming_no_link_is_a_404(client, shared, token):
    assert client.get(f"/s/{token}/" if token else "/s/x./").status_code == 404


def test_the_right_id_with_a_wrong_secret_is_a_404(client, shared):
    _, _, link, token = shared
    secret = token.split(".", 1)[1]
    wrong = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    assert client.get(f"/s/{link.pk}.{wrong}/").status_code == 404
    assert client.get(f"/s/{link.pk}.{secret}/").status_code == 200


def test_a_link_closes_at_its_expiry_to_the_second(client, shared):
    _, _, link, token = shared
    url = reverse("sharing:shared", args=[token])
    ShareLink.objects.filter(pk=link.pk).update(
        expires_at=timezone.now() + timedelta(seconds=30))
    assert client.get(url).status_code == 200
    ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now())
    response = client.get(url)
    assert response.status_code == 410
    assert "This share link has expired" in response.content.decode()


def test_a_revoked_link_is_a_410_and_revoking_is_audited_once(client, shared):
    lead, _, link, token = shared
    share_link_revoke(link=link, revoked_by=lead)
    response = client.get(reverse("sharing:shared", args=[token]))
    assert response.status_code == 410
    assert "This share link was revoked" in response.content.decode()
    with pytest.raises(Exception, match="already revoked"):
        share_link_revoke(link=link, revoked_by=lead)
    events = AuditEvent.objects.filter(object_type="share_link", object_id=str(link.pk))
    assert sorted(events.values_list("action", flat=True)) == [
        Action.SHARE_LINK_CREATED, Action.SHARE_LINK_REVOKED]
    assert events.get(action=Action.SHARE_LINK_REVOKED).actor_label == "lead-q7z"


def test_a_lead_makes_a_link_through_the_page_and_sees_it_listed(client, shared):
    lead, grading, _, _ = shared
    client.force_login(lead)
    url = reverse("sharing:share_create") + f"?evaluation={grading.evaluation.pk}"
    response = client.post(url, {"days": "3"})
    assert response.status_code == 200
    new = ShareLink.objects.latest("pk")
    assert round((new.expires_at - new.created_at).total_seconds()) == 3 * 86_400
    shown = response.context["url"]
    assert shown.split("/s/")[1].rstrip("/").split(".")[0] == str(new.pk)
    assert client.get(shown).status_code == 200
    listing = client.get(reverse("sharing:share_list", args=[grading.evaluation.team_id]))
    assert listing.content.decode().count('data-testid="link-state"') == 2
    assert AuditEvent.objects.filter(action=Action.SHARE_LINK_CREATED).count() == 2


@pytest.mark.parametrize("days", ["0", "91", "x"])
def test_it_refuses_a_lifetime_outside_1_to_90_days(client, shared, days):
    lead, grading, _, _ = shared
    client.force_login(lead)
    url = reverse("sharing:share_create") + f"?evaluation={grading.evaluation.pk}"
    assert client.post(url, {"days": days}).status_code == 400
    assert ShareLink.objects.count() == 1


def test_a_compare_link_shows_b_against_a_whatever_the_query_string_says(client, shared):
    lead, grading, _, _ = shared
    again = independent_grading(grading.evaluation.team, member(
        grading.evaluation.team, Role.GRADER, "grader-two-q7z"), second=grading.second,
        judge_name="Echo two")
    outside = TeamFactory(name="Other")
    other = independent_grading(outside, member(outside, Role.GRADER, "outsider-q7z"),
                                second=member(outside, Role.GRADER, "outsider-two-q7z"),
                                judge_name="Echo three")
    _, token = share_link_create(evaluation=grading.evaluation,
                                 other_evaluation=again.evaluation, created_by=lead, days=1)
    url = reverse("sharing:shared", args=[token])
    body = client.get(url + f"?a={other.evaluation.pk}&b={other.evaluation.pk}").content
    assert f"B: {again.evaluation.name} against A: {grading.evaluation.name}" in body.decode()
    assert SECOND_GRADER not in body.decode()


def test_a_comparison_link_across_two_teams_is_refused(shared):
    lead, grading, _, _ = shared
    outside = TeamFactory(name="Elsewhere")
    other = independent_grading(outside, member(outside, Role.GRADER, "far-q7z"),
                                second=member(outside, Role.GRADER, "far-two-q7z"),
                                judge_name="Echo far")
    with pytest.raises(ValidationError, match="same team"):
        share_link_create(evaluation=grading.evaluation, other_evaluation=other.evaluation,
                          created_by=lead, days=1)
    assert ShareLink.objects.count() == 1


def _share_page_queries(client, keywords: int) -> int:
    team = TeamFactory()
    lead = member(team, Role.LEAD)
    evaluation = evaluation_with_slots(team, keywords=keywords, positions=3)
    _, token = share_link_create(evaluation=evaluation, created_by=lead, days=1)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("sharing:shared", args=[token])).status_code == 200
    return len(queries)


def test_the_shared_dashboard_runs_the_same_queries_at_any_size(client):
    assert _share_page_queries(client, 2) == _share_page_queries(client, 20)
