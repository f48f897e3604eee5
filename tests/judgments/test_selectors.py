"""Why a grader's queue is empty, evaluations whose routing tags nobody carries, and the
access functions of the grading pages and API."""

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from evaluations.demo import product_image
from evaluations.models import DemoProduct, Evaluation, Snapshot
from judgments import queue_selectors, selectors
from judgments.grader_tags import grader_tags_set
from judgments.grading import feedback_submit
from judgments.models import FeedbackSlot
from judgments.queue import slot_claim_next
from searchtweak.models import Role
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member

pytestmark = pytest.mark.django_db


def grade_all(user, team, grade: int = 1) -> int:
    graded = 0
    while (slot := slot_claim_next(user=user, team=team)) is not None:
        feedback_submit(user=user, slot_id=slot.pk, grade=grade)
        graded += 1
    return graded


def empty_queue(personas, evaluation=None):
    return queue_selectors.grader_empty_queue(
        user=personas.grader, team=personas.team, evaluation=evaluation)


# --- grader_empty_queue ---


def test_it_says_no_team_without_a_team(personas):
    empty = queue_selectors.grader_empty_queue(user=personas.grader, team=None)
    assert empty.reason == "no_team"


def test_it_says_nothing_is_active_when_no_evaluation_runs(personas):
    paused = evaluation_with_slots(personas.team, keywords=1, positions=2,
                                   status=Evaluation.Status.PENDING)
    assert empty_queue(personas).reason == "inactive"
    assert empty_queue(personas, evaluation=paused).reason == "inactive"
    assert empty_queue(personas).graded_count == 0


def test_it_thanks_a_grader_who_graded_everything_even_once_it_finished(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=3)
    assert grade_all(personas.grader, personas.team) == 6
    # An evaluation finishes on its last grade (once the recompute ran): still a thank-you.
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.FINISHED)
    empty = empty_queue(personas)
    assert (empty.reason, empty.graded_count, empty.leased_count) == ("done", 6, 0)
    assert empty_queue(personas, evaluation=evaluation).graded_count == 6


def test_it_says_how_many_results_wait_for_which_tags(personas):
    grader_tags_set(team=personas.team, user=personas.grader, tags=["de"])
    evaluation_with_slots(personas.team, keywords=2, positions=3, tags=["DE", "fashion"])
    evaluation_with_slots(personas.team, keywords=1, positions=4, strategy=3, tags=["fr"])
    evaluation_with_slots(personas.team, keywords=1, positions=2, tags=["fashion", "de"])
    assert slot_claim_next(user=personas.grader, team=personas.team) is None
    empty = empty_queue(personas)
    assert empty.reason == "routed"
    # Grouped by the tags needed (as graders carry them); three slots of a result are one.
    assert empty.routed_elsewhere == (
        queue_selectors.RoutedElsewhere(tags=("de", "fashion"), result_count=8),
        queue_selectors.RoutedElsewhere(tags=("fr",), result_count=4),
    )
    assert empty.routed_result_count == 12
    assert empty.carried_tags == ("de",)


def test_it_leaves_out_graded_results_from_the_waiting_count(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=3, tags=["x"])
    grader_tags_set(team=personas.team, user=personas.lead, tags=["x"])
    slot = slot_claim_next(user=personas.lead, team=personas.team)
    feedback_submit(user=personas.lead, slot_id=slot.pk, grade=2)
    empty = empty_queue(personas, evaluation=evaluation)
    assert empty.reason == "routed"
    assert [(g.tags, g.result_count) for g in empty.routed_elsewhere] == [(("x",), 2)]
    assert empty.carried_tags == ()


def test_it_says_others_hold_the_rest_and_until_when(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=3)
    feedback_submit(
        user=personas.grader, slot_id=slot_claim_next(
            user=personas.grader, team=personas.team).pk, grade=1)
    held = [slot_claim_next(user=user, team=personas.team)
            for user in (personas.lead, personas.admin)]
    assert slot_claim_next(user=personas.grader, team=personas.team) is None
    empty = empty_queue(personas)
    assert (empty.reason, empty.leased_count, empty.graded_count) == ("leased", 2, 1)
    assert empty.leased_until == min(
        FeedbackSlot.objects.get(pk=slot.pk).lease_expires_at for slot in held)


def test_it_does_not_count_results_the_grader_already_graded_as_held_by_others(personas):
    # Three graders per result: the others' slots of what this grader graded are not theirs.
    evaluation_with_slots(personas.team, keywords=1, positions=2, strategy=3)
    assert grade_all(personas.grader, personas.team) == 2
    slot_claim_next(user=personas.lead, team=personas.team)
    empty = empty_queue(personas)
    assert (empty.reason, empty.leased_count, empty.graded_count) == ("done", 0, 2)


def test_it_says_everything_is_graded_when_others_graded_it(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=2, auto_finish=False)
    assert grade_all(personas.lead, personas.team) == 2
    empty = empty_queue(personas)
    assert (empty.reason, empty.graded_count, empty.leased_count) == ("done", 0, 0)


# --- routing_tags_nobody_carries ---


def test_it_names_the_routing_tags_no_member_carries_all_of(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1,
                                       tags=["DE", "fashion"])
    assert queue_selectors.routing_tags_nobody_carries(evaluation=evaluation) == ("de", "fashion")
    grader_tags_set(team=personas.team, user=personas.grader, tags=["de"])
    grader_tags_set(team=personas.team, user=personas.lead, tags=["fashion"])
    # Each tag has a carrier, but nobody carries both.
    assert queue_selectors.routing_tags_nobody_carries(evaluation=evaluation) == ("de", "fashion")


def test_it_is_satisfied_once_one_member_carries_every_tag(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1,
                                       tags=["DE", "fashion"])
    grader_tags_set(team=personas.team, user=personas.grader,
                    tags=["fashion", "de", "extra"])
    assert queue_selectors.routing_tags_nobody_carries(evaluation=evaluation) == ()


def test_it_ignores_tags_carried_in_another_team_or_by_a_former_member(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, tags=["de"])
    grader_tags_set(team=personas.other_team, user=personas.outsider, tags=["de"])
    former = member(personas.team, "grader", "former")
    grader_tags_set(team=personas.team, user=former, tags=["de"])
    former.memberships.all().delete()
    assert queue_selectors.routing_tags_nobody_carries(evaluation=evaluation) == ("de",)


def test_an_evaluation_without_routing_tags_needs_no_carrier(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    assert queue_selectors.routing_tags_nobody_carries(evaluation=evaluation) == ()


# --- document_image_src ---

SVG_URI = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4="


@pytest.mark.parametrize("image", [
    SVG_URI,
    "data:image/png;base64,iVBORw0KGgo=",
    "DATA:image/JPEG;base64,/9j/4AAQ",
    "data:image/webp,UklGR",
    "data:image/gif;base64,R0lGODlh",
    "https://cdn.example.com/shoe.jpg?w=200",
    "http://img.example.com/a.png",
])
def test_it_shows_data_images_and_web_addresses(image):
    assert queue_selectors.document_image_src(f"  {image} ") == image


def test_it_shows_the_demo_engines_images():
    # The demo search answers data:image/svg+xml URIs; they used to be dropped.
    image = product_image(DemoProduct(sku="D1", title="Red running shoe", color="red"))
    assert image.startswith("data:image/svg+xml;base64,")
    assert queue_selectors.document_image_src(image) == image


@pytest.mark.parametrize("image", [
    "javascript:alert(1)",
    " JavaScript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "data:image/svg+xmlx,<svg/>",
    "data:image/bmp;base64,Qk0=",
    "vbscript:msgbox",
    "/media/shoe.jpg",
    "//evil.example.com/x.png",
    "https:///nohost.png",
    "ftp://example.com/a.png",
    "",
])
def test_it_refuses_anything_else_as_an_image(image):
    assert queue_selectors.document_image_src(image) == ""


# --- the grading API's raw-SQL targets: the access rule of searchtweak.access ---


@pytest.mark.parametrize("persona", ["owner", "admin", "lead", "grader"])
def test_the_grading_targets_let_every_member_of_the_team_in(personas, persona):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, tags=["de"])
    snapshot = Snapshot.objects.get(keyword__evaluation=evaluation)
    user = getattr(personas, persona)
    target = selectors.evaluation_target_for_user(user=user, evaluation_id=evaluation.pk)
    assert (target.evaluation_id, target.team_id, target.status, target.scale, target.tags,
            target.snapshot_id) == (evaluation.pk, personas.team.pk, Evaluation.Status.ACTIVE,
                                    "graded", ["de"], None)
    target = selectors.snapshot_target_for_user(user=user, snapshot_id=snapshot.pk)
    assert (target.evaluation_id, target.snapshot_id) == (evaluation.pk, snapshot.pk)


def test_the_grading_targets_are_404_for_an_outsider_and_a_missing_row(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    snapshot = Snapshot.objects.get(keyword__evaluation=evaluation)
    for user, evaluation_id in ((personas.outsider, evaluation.pk), (personas.owner, 999_999)):
        with pytest.raises(Http404, match=r"^No such evaluation\.$"):
            selectors.evaluation_target_for_user(user=user, evaluation_id=evaluation_id)
    for user, snapshot_id in ((personas.outsider, snapshot.pk), (personas.owner, 999_999)):
        with pytest.raises(Http404, match=r"^No such snapshot\.$"):
            selectors.snapshot_target_for_user(user=user, snapshot_id=snapshot_id)


def test_a_slot_answers_a_member_below_the_role_403_and_an_outsider_404(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    slot = FeedbackSlot.objects.filter(evaluation=evaluation).first()
    assert selectors.slot_get_for_user(user=personas.grader, slot_id=slot.pk) == slot
    assert selectors.slot_get_for_user(user=personas.lead, slot_id=slot.pk,
                                       minimum_role=Role.LEAD) == slot
    with pytest.raises(PermissionDenied, match=r"^This needs the lead role\.$"):
        selectors.slot_get_for_user(user=personas.grader, slot_id=slot.pk,
                                    minimum_role=Role.LEAD)
    for slot_id in (slot.pk, 999_999):
        with pytest.raises(Http404, match=r"^No such slot\.$"):
            selectors.slot_get_for_user(user=personas.outsider, slot_id=slot_id)


def test_scales_are_the_admins_and_say_so(personas):
    assert selectors.team_get_for_admin(user=personas.admin,
                                        team_id=personas.team.pk) == personas.team
    for user in (personas.lead, personas.grader):
        with pytest.raises(PermissionDenied) as caught:
            selectors.team_get_for_admin(user=user, team_id=personas.team.pk)
        assert str(caught.value) == "Scales and transformers need the admin role."
    with pytest.raises(Http404, match=r"^No such team\.$"):
        selectors.team_get_for_admin(user=personas.outsider, team_id=personas.team.pk)
