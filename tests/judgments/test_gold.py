"""Gold items: made from adjudicated answers, by hand and by import;
slipped into the queue as probes that look like slots, graded on the probe, never in
metrics."""

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Snapshot
from judgments import gold, gold_accuracy, gold_items
from judgments.adjudication import snapshot_adjudicate
from judgments.grading import slot_grade_by_lead
from judgments.models import FeedbackSlot, GoldItem, GoldProbe
from judgments.slot_json import ASSIGNED_SLOT_FIELDS
from metrics.models import KeywordMetricValue
from metrics.recompute.run import evaluation_metrics_recompute
from metrics.reports.leaderboards import grader_leaderboard
from notifications.models import Notification
from searchtweak.models import Role
from tests.evaluations.factories import EvaluationMetricFactory
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member

pytestmark = pytest.mark.django_db


def _snapshot(evaluation, keyword_position=1, position=1) -> Snapshot:
    return Snapshot.objects.get(keyword__evaluation=evaluation,
                                keyword__position=keyword_position, position=position)


def _finished_with_gold(team, *, items: int = 3, scale: str = "graded") -> Evaluation:
    """A finished evaluation whose first `items` results are gold, answer 2 (graded) or 1."""
    source = evaluation_with_slots(team, keywords=1, positions=items, scale=scale,
                                   texts=["gold query"])
    for position in range(1, items + 1):
        GoldItem.objects.create(team=team, scale=scale, snapshot=_snapshot(source, 1, position),
                                grade=2 if scale == "graded" else 1, source="page")
    Evaluation.objects.filter(pk=source.pk).update(status=Evaluation.Status.FINISHED)
    return source


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


# --- making gold items ---


def test_an_adjudicated_answer_marked_gold_is_a_gold_item(personas):
    evaluation = evaluation_with_slots(personas.team)
    slot = FeedbackSlot.objects.filter(evaluation=evaluation).first()
    slot_grade_by_lead(lead=personas.lead, slot_id=slot.pk, grade=1)
    snapshot_adjudicate(lead=personas.lead, evaluation=evaluation, snapshot=slot.snapshot,
                        grade=3, gold=True)
    item = GoldItem.objects.get(snapshot=slot.snapshot)
    assert (item.grade, item.source, item.scale, item.team_id) == (
        3, "adjudicated", "graded", personas.team.pk)
    # Decided again without gold: the adjudicated gold item goes.
    snapshot_adjudicate(lead=personas.lead, evaluation=evaluation, snapshot=slot.snapshot,
                        grade=2, gold=False)
    assert not GoldItem.objects.exists()


def test_make_gold_takes_the_agreed_grade_or_asks_for_one(personas):
    evaluation = evaluation_with_slots(personas.team, strategy=3)
    snapshot = _snapshot(evaluation)
    slots = list(FeedbackSlot.objects.filter(snapshot=snapshot).order_by("index"))
    slot_grade_by_lead(lead=personas.lead, slot_id=slots[0].pk, grade=2)
    item = gold_items.gold_item_make(user=personas.lead, evaluation=evaluation,
                                     snapshot_id=snapshot.pk)
    assert (item.grade, item.source) == (2, "page")
    slot_grade_by_lead(lead=personas.owner, slot_id=slots[1].pk, grade=0)
    with pytest.raises(ValidationError) as refused:
        gold_items.gold_item_make(user=personas.lead, evaluation=evaluation,
                                  snapshot_id=snapshot.pk)
    assert "grade" in refused.value.message_dict
    with pytest.raises(ValidationError) as refused:
        gold_items.gold_item_make(user=personas.lead, evaluation=evaluation,
                                  snapshot_id=snapshot.pk, grade=7)
    assert "grade" in refused.value.message_dict
    assert GoldItem.objects.get().grade == 2  # unchanged by the refusals
    other = evaluation_with_slots(personas.team)
    with pytest.raises(ValidationError) as refused:
        gold_items.gold_item_make(user=personas.lead, evaluation=other,
                                  snapshot_id=snapshot.pk, grade=1)
    assert "snapshot" in refused.value.message_dict


def test_an_import_names_every_bad_line_and_stores_nothing_then(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2)
    bad = (b"keyword,doc_id,grade\n"
           b"query 1,query 1-d1,3\n"
           b"query 1,nowhere,1\n"
           b"query 2,query 2-d2,9\n"
           b"QUERY 1 ,query 1-d1,2\n"
           b"only,two\n")
    with pytest.raises(ValidationError) as refused:
        gold_items.gold_items_import(user=personas.lead, evaluation=evaluation, content=bad)
    errors = refused.value.message_dict["file"]
    assert [error.split(":")[0] for error in errors] == ["line 3", "line 4", "line 5", "line 6"]
    assert "nowhere" in errors[0] and "9" in errors[1]
    assert not GoldItem.objects.exists()
    good = (b'{"keyword": "query 1", "doc_id": "query 1-d1", "grade": 3}\n'
            b'{"keyword": "Query 2", "doc_id": "query 2-d2", "grade": 0}\n')
    assert gold_items.gold_items_import(user=personas.lead, evaluation=evaluation,
                                        content=good) == 2
    assert sorted(GoldItem.objects.values_list("snapshot__doc_id", "grade", "source")) == [
        ("query 1-d1", 3, "import"), ("query 2-d2", 0, "import")]


# --- the queue ---


def test_probe_due_hits_the_rate_over_many_claims():
    due = sum(gold.probe_due(user_id=7, evaluation_id=3, claim_number=n, rate=0.05)
              for n in range(10_000))
    assert 450 <= due <= 550
    assert not any(gold.probe_due(user_id=7, evaluation_id=3, claim_number=n, rate=0)
                   for n in range(1000))


def _grade_until_empty(client, evaluation, grade_of) -> list[dict]:
    """Grade through the API's next/ until nothing is left; every answer handed out."""
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    handed = []
    response = client.post(url, {}, format="json")
    while response.status_code == 200:
        slot = response.json()
        handed.append(slot)
        response = client.post(url, {"snapshot": slot["snapshot"], "grade": grade_of(slot)},
                               format="json")
        assert response.status_code in (200, 204), response.content
    return handed


def test_the_queue_slips_in_each_gold_item_once_and_metrics_never_see_it(personas):
    source = _finished_with_gold(personas.team, items=3)
    evaluation = evaluation_with_slots(personas.team, keywords=4, positions=10,
                                       gold_rate=0.5)
    EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=10, position=0)
    handed = _grade_until_empty(_client(personas.grader), evaluation,
                                lambda slot: 1 if slot["doc_id"].endswith("d1") else 3)
    source_snapshots = set(Snapshot.objects.filter(keyword__evaluation=source)
                           .values_list("pk", flat=True))
    probes = [slot for slot in handed if slot["snapshot"] in source_snapshots]
    # Every gold item once (three, fewer than the due claims at rate 0.5), every slot once.
    assert sorted(slot["snapshot"] for slot in probes) == sorted(source_snapshots)
    assert len(handed) == 40 + 3
    assert FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True).count() == 0
    # The probes hold the grades; no slot of the finished evaluation took one.
    assert sorted(GoldProbe.objects.values_list("grade", "expected")) == [(1, 2), (3, 2), (3, 2)]
    assert not FeedbackSlot.objects.filter(evaluation=source, grade__isnull=False).exists()
    # A probe reads as a slot: the same keys, the graded evaluation, nothing of gold.
    assert all(set(slot) == {f.name for f in ASSIGNED_SLOT_FIELDS} for slot in handed)
    assert {slot["evaluation"] for slot in probes} == {evaluation.pk}
    assert "gold" not in str(probes).lower().replace("gold query", "")
    # The values are those of the slots alone: the same evaluation graded without gold
    # (every result of d1 grade 1, others 3) has the same nDCG per keyword.
    twin = evaluation_with_slots(personas.team, keywords=4, positions=10, gold_rate=0)
    EvaluationMetricFactory(evaluation=twin, code="ndcg", k=10, position=0)
    twin_handed = _grade_until_empty(_client(personas.grader), twin,
                                     lambda slot: 1 if slot["doc_id"].endswith("d1") else 3)
    assert len(twin_handed) == 40
    for graded in (evaluation, twin):
        evaluation_metrics_recompute(evaluation_id=graded.pk)
    values = sorted(KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
                    .values_list("keyword__position", "value"))
    twin_values = sorted(KeywordMetricValue.objects.filter(keyword__evaluation=twin)
                         .values_list("keyword__position", "value"))
    assert values == twin_values and len(values) == 4


def test_a_grader_shown_all_but_one_gold_item_is_shown_the_last_one_next(personas):
    source = _finished_with_gold(personas.team, items=20)
    *shown, last = GoldItem.objects.filter(snapshot__keyword__evaluation=source).order_by("pk")
    earlier = evaluation_with_slots(personas.team, keywords=1, positions=1)
    GoldProbe.objects.bulk_create([
        GoldProbe(gold=item, user=personas.grader, evaluation=earlier, expected=item.grade,
                  grade=item.grade) for item in shown])
    grader = personas.grader
    # The grader's first claim in it must be due a probe; which one is, a hash decides.
    evaluation = next(
        candidate for candidate in (evaluation_with_slots(personas.team, keywords=1,
                                                          positions=5, gold_rate=0.5)
                                    for _ in range(30))
        if gold.probe_due(user_id=grader.pk, evaluation_id=candidate.pk, claim_number=0,
                          rate=0.5))
    # The items are tried in a random order, a few at a time: asked several times, a rule
    # that let shown items back in would miss the last one at least once.
    for _ in range(5):
        probe = gold.probe_claim(user=grader, evaluation=evaluation, now=timezone.now())
        assert (probe.gold_id, probe.user_id, probe.evaluation_id) == (
            last.pk, grader.pk, evaluation.pk)
        probe.delete()


def test_no_probe_without_a_rate_or_from_an_unfinished_evaluation(personas):
    source = _finished_with_gold(personas.team, items=2)
    quiet = evaluation_with_slots(personas.team, keywords=2, positions=10, gold_rate=0)
    assert len(_grade_until_empty(_client(personas.grader), quiet, lambda slot: 1)) == 20
    Evaluation.objects.filter(pk=source.pk).update(status=Evaluation.Status.ACTIVE)
    busy = evaluation_with_slots(personas.team, keywords=2, positions=10, gold_rate=0.5)
    assert len(_grade_until_empty(_client(personas.grader), busy, lambda slot: 1)) == 20
    assert not GoldProbe.objects.exists()


def test_a_probe_is_graded_through_the_snapshot_api_too_and_held_until_graded(personas):
    _finished_with_gold(personas.team, items=1)
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=40, gold_rate=0.5)
    client = _client(personas.grader)
    url = f"/api/v1/evaluations/{evaluation.pk}/next/"
    slot = client.post(url, {}, format="json").json()
    while not GoldProbe.objects.exists():
        slot = client.post(url, {"snapshot": slot["snapshot"], "grade": 1},
                           format="json").json()
    probe = GoldProbe.objects.get()
    assert slot["snapshot"] == probe.gold.snapshot_id and slot["id"] == probe.pk
    # Asking again hands the same probe back.
    again = client.post(url, {}, format="json").json()
    assert {**again, "lease_expires_at": None} == {**slot, "lease_expires_at": None}
    response = client.post(f"/api/v1/snapshots/{slot['snapshot']}/grade/", {"grade": 2},
                           format="json")
    assert response.status_code == 200 and response.json()["grade"] == 2
    probe.refresh_from_db()
    assert probe.grade == 2 and probe.graded_at is not None
    bad = client.post(f"/api/v1/snapshots/{slot['snapshot']}/grade/", {"grade": 9},
                      format="json")
    assert bad.status_code == 400
    probe.refresh_from_db()
    assert probe.grade == 2
    # Another grader with no probe on that result gets the finished evaluation's refusal.
    other = member(personas.team, Role.GRADER, "other")
    refused = _client(other).post(f"/api/v1/snapshots/{slot['snapshot']}/grade/",
                                  {"grade": 2}, format="json")
    assert refused.status_code == 400 and "finished" in str(refused.json())


# --- accuracy, drift and the lead's notice ---


def test_accuracy_error_and_drift_of_answers_in_time_order():
    # 12 answers: the first 2 wrong, the last 10 right... then reversed.
    improving = [(0, 2), (1, 2)] + [(2, 2)] * 10
    standing = gold_accuracy.gold_accuracy_of(improving)
    assert (standing.answers, standing.correct, standing.accuracy) == (12, 10, 10 / 12)
    assert standing.mae == pytest.approx((2 + 1) / 12)
    # The latest 6 (half of 12, below the window of 10) against the first 6.
    assert (standing.recent, standing.earlier) == (1.0, 4 / 6)
    assert standing.drift == pytest.approx(1 - 4 / 6)
    assert not standing.low
    worsening = gold_accuracy.gold_accuracy_of([(2, 2)] * 4 + [(0, 2)] * 8)
    assert worsening.accuracy == pytest.approx(4 / 12) and worsening.low
    assert worsening.drift == pytest.approx(0 - 4 / 6)
    assert gold_accuracy.gold_accuracy_of([(1, 1)]).drift is None
    # Below the bar only on 10 answers or more.
    assert not gold_accuracy.gold_accuracy_of([(0, 2)] * 9).low
    assert gold_accuracy.gold_accuracy_of([(0, 2)] * 10).low


def test_leads_are_told_once_when_a_grader_falls_below_the_bar(personas,
                                                               django_capture_on_commit_callbacks):
    _finished_with_gold(personas.team, items=12)
    evaluation = evaluation_with_slots(personas.team, keywords=4, positions=10, gold_rate=0.5)
    client = _client(personas.grader)
    with django_capture_on_commit_callbacks(execute=True):
        handed = _grade_until_empty(client, evaluation, lambda slot: 0)  # gold answers are 2
    assert GoldProbe.objects.filter(grade=0).count() == 12
    notices = Notification.objects.filter(event="gold_accuracy_low")
    # The owner, admin and lead, once each (the 10th wrong answer); not the grader.
    assert sorted(notices.values_list("user__username", flat=True)) == [
        "admin", "lead", "owner"]
    assert "grader answered 0 of 10 gold items right (0%)" in notices.first().text
    assert len(handed) == 40 + 12
    lead_page = Client()
    lead_page.force_login(personas.lead)
    page = lead_page.get("/leaderboards/").content.decode()
    assert 'data-testid="gold-low"' in page and 'data-testid="gold-below">below bar' in page
    grader_page = Client()
    grader_page.force_login(personas.grader)
    assert 'data-testid="gold-low"' not in grader_page.get("/leaderboards/").content.decode()
    standing = {s.username: s for s in grader_leaderboard(team=personas.team)}["grader"]
    assert (standing.gold.answers, standing.gold.correct, standing.gold.mae) == (12, 0, 2.0)


def test_a_judges_accuracy_comes_from_its_grades_of_gold_results_elsewhere(personas):
    source = _finished_with_gold(personas.team, items=2)
    judge = member(personas.team, Role.GRADER, "judge-account")
    judge.is_judge = True
    judge.save(update_fields=["is_judge"])
    # The same keyword and documents in a later run: the judge grades one right, one wrong.
    rerun = evaluation_with_slots(personas.team, keywords=1, positions=2, texts=["Gold Query"],
                                  doc_ids=["gold query-d1", "gold query-d2"])
    for position, grade in ((1, 2), (2, 3)):
        slot = FeedbackSlot.objects.get(evaluation=rerun, position=position)
        slot_grade_by_lead(lead=judge, slot_id=slot.pk, grade=grade)
    # Its grade of the gold item's own result does not count.
    own = FeedbackSlot.objects.filter(evaluation=source).first()
    FeedbackSlot.objects.filter(pk=own.pk).update(user=judge, grade=0)
    standing = gold_accuracy.team_gold_accuracy(team_id=personas.team.pk)[judge.pk]
    assert (standing.answers, standing.correct, standing.mae) == (2, 1, 0.5)


# --- the API ---


def test_the_api_makes_lists_and_imports_gold_items(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=2)
    lead = _client(personas.lead)
    url = f"/api/v1/evaluations/{evaluation.pk}/gold/"
    snapshot = _snapshot(evaluation, 1, 2)
    made = lead.post(url, {"snapshot": snapshot.pk, "grade": 3}, format="json")
    assert made.status_code == 201
    assert {key: made.json()[key] for key in ("snapshot", "keyword", "doc_id", "grade",
                                              "source", "created_by")} == {
        "snapshot": snapshot.pk, "keyword": "query 1", "doc_id": "query 1-d2", "grade": 3,
        "source": "page", "created_by": "lead"}
    refused = lead.post(url, {"snapshot": snapshot.pk, "grade": 8}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["grade"]
    ungraded = lead.post(url, {"snapshot": _snapshot(evaluation, 2, 1).pk}, format="json")
    assert ungraded.status_code == 400 and list(ungraded.json()) == ["grade"]
    from django.core.files.uploadedfile import SimpleUploadedFile

    bad = SimpleUploadedFile("gold.csv", b"query 2,query 2-d1,1\nquery 2,missing,1\n")
    refused = lead.post(url + "import/", {"file": bad}, format="multipart")
    assert refused.status_code == 400
    assert refused.json()["file"] == [
        "line 2: the evaluation shows no document 'missing' for 'query 2'."]
    good = SimpleUploadedFile("gold.csv", b"keyword,doc_id,grade\nquery 2,query 2-d1,1\n")
    imported = lead.post(url + "import/", {"file": good}, format="multipart")
    assert imported.status_code == 201 and imported.json() == {"imported": 1}
    listed = lead.get(url).json()
    assert [(row["doc_id"], row["grade"], row["source"]) for row in listed] == [
        ("query 1-d2", 3, "page"), ("query 2-d1", 1, "import")]
    assert _client(personas.grader).get(url).status_code == 403


def test_the_feedback_page_makes_a_graded_result_gold(personas):
    evaluation = evaluation_with_slots(personas.team)
    slot = FeedbackSlot.objects.filter(evaluation=evaluation).order_by("pk").first()
    page = Client()
    page.force_login(personas.lead)
    url = f"/feedback/slots/{slot.pk}/gold/"
    # Ungraded: refused with the reason, nothing made.
    response = page.post(url, follow=True)
    assert "Grade the result first" in response.content.decode()
    assert not GoldItem.objects.exists()
    slot_grade_by_lead(lead=personas.lead, slot_id=slot.pk, grade=2)
    listing = page.get(f"/feedback/evaluations/{evaluation.pk}/").content.decode()
    assert f'action="/feedback/slots/{slot.pk}/gold/"' in listing
    response = page.post(url)
    assert response.status_code == 302
    item = GoldItem.objects.get()
    assert (item.snapshot_id, item.grade, item.source, item.created_by) == (
        slot.snapshot_id, 2, "page", personas.lead)
    grader = Client()
    grader.force_login(personas.grader)
    assert grader.post(url).status_code == 403
