"""A clicks grader is a judge: it shadows first, is calibrated against the people's grades
on the judges' page, counts only past the team's bar (or an admin's stated reason), and
then fills slots through the one grade-writing service. Learned from simulated clicks of
known true grades."""

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from behaviour import learning
from behaviour.models import LearnedGrade
from judges import calibration, runs
from judges.models import Judge, JudgeRun, JudgeRunItem
from judges.trust import judge_mark_counts
from judgments.models import FeedbackSlot
from tests.behaviour.clicks_data import evaluation_of, simulated_source
from tests.judges.calibration_data import bar

pytestmark = pytest.mark.django_db

Mode, Status, ItemStatus = JudgeRun.Mode, JudgeRun.Status, JudgeRunItem.Status


@pytest.fixture
def simulated(personas):
    return simulated_source(personas.team)


def grader_of(personas, simulated, **fields):
    fields = {"name": "Clicks PBM", "click_model": "pbm", **fields}
    return learning.click_grader_create(team=personas.team, by=personas.admin,
                                        source=simulated.source, **fields)


def people_grade_the_truth(evaluation, simulated, person):
    for found in FeedbackSlot.objects.filter(evaluation=evaluation).select_related(
            "snapshot", "keyword"):
        grade = simulated.truth.get((found.keyword.normalized_text, found.snapshot.doc_id))
        if grade is not None:
            FeedbackSlot.objects.filter(pk=found.pk).update(
                user=person, grade=grade, graded_at=timezone.now())


def start(judge, evaluation, mode, personas, commit):
    with commit(execute=True):
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=mode,
                             started_by=personas.admin)
    run.refresh_from_db()
    return run


def test_a_shadow_run_learns_the_true_grades_and_calibrates_at_kappa_one(
        personas, simulated, django_capture_on_commit_callbacks):
    grader = grader_of(personas, simulated)
    assert grader.judge.provider == Judge.Provider.CLICKS and grader.judge.counts is False
    evaluation = evaluation_of(personas.team, simulated)
    people_grade_the_truth(evaluation, simulated, personas.grader)
    run = start(grader.judge, evaluation, Mode.SHADOW, personas,
                django_capture_on_commit_callbacks)
    assert (run.status, run.pair_count, run.done_count, run.failed_count) == (
        Status.DONE, 36, 36, 0)
    learned = {(item.keyword.normalized_text, item.snapshot.doc_id): item.grade
               for item in JudgeRunItem.objects.filter(run=run).select_related(
                   "snapshot", "keyword")}
    assert learned == simulated.truth
    # Shadow: the people's slots are untouched and the judge holds none.
    assert not FeedbackSlot.objects.filter(user=grader.judge.user).exists()
    figures = calibration.judge_calibration(judge=grader.judge, evaluation=evaluation)
    assert (figures.pair_count, figures.kappa, figures.exact_match_rate) == (36, 1.0, 1.0)
    evidence = LearnedGrade.objects.get(item__run=run, item__snapshot__doc_id="d0",
                                        item__keyword__normalized_text="query 0")
    assert (evidence.click_model, evidence.min_impressions, evidence.source_id) == (
        "pbm", 10, simulated.source.pk)
    assert evidence.impressions == 4000 and 0 < evidence.clicks < 4000


def test_it_counts_past_the_bar_and_then_fills_slots_through_the_grade_service(
        personas, simulated, django_capture_on_commit_callbacks):
    bar(personas.team, min_pairs=30, min_kappa=0.8)
    grader = grader_of(personas, simulated)
    calibrated = evaluation_of(personas.team, simulated)
    people_grade_the_truth(calibrated, simulated, personas.grader)
    start(grader.judge, calibrated, Mode.SHADOW, personas, django_capture_on_commit_callbacks)
    judge = judge_mark_counts(judge=grader.judge, counts=True, by=personas.admin)
    assert judge.counts and judge.counts_evidence["kappa"] == 1.0
    assert judge.counts_override_reason == ""

    fresh = evaluation_of(personas.team, simulated)
    run = start(judge, fresh, Mode.UNGRADED, personas, django_capture_on_commit_callbacks)
    assert (run.status, run.done_count) == (Status.DONE, 36)
    slots = FeedbackSlot.objects.filter(evaluation=fresh).select_related("snapshot", "keyword")
    assert {(s.keyword.normalized_text, s.snapshot.doc_id): s.grade for s in slots} \
        == simulated.truth
    assert {s.user_id for s in slots} == {judge.user_id}
    assert all("clicks in 4000 impressions" in s.reason for s in slots)


def test_below_the_bar_it_counts_only_with_a_stated_reason(
        personas, simulated, django_capture_on_commit_callbacks):
    bar(personas.team, min_pairs=100, min_kappa=0.8)  # 36 pairs fall short
    grader = grader_of(personas, simulated)
    evaluation = evaluation_of(personas.team, simulated)
    people_grade_the_truth(evaluation, simulated, personas.grader)
    start(grader.judge, evaluation, Mode.SHADOW, personas, django_capture_on_commit_callbacks)
    with pytest.raises(ValidationError) as refused:
        judge_mark_counts(judge=grader.judge, counts=True, by=personas.admin)
    assert "Only 36 pairs" in refused.value.message_dict["override_reason"][0]
    judge = judge_mark_counts(judge=grader.judge, counts=True, by=personas.admin,
                              override_reason="the clicks are our best signal")
    assert judge.counts and judge.counts_override_reason == "the clicks are our best signal"


def test_a_clicks_grader_that_does_not_count_cannot_fill_slots(
        personas, simulated, django_capture_on_commit_callbacks):
    grader = grader_of(personas, simulated)
    evaluation = evaluation_of(personas.team, simulated)
    with pytest.raises(ValidationError, match="does not count yet"):
        start(grader.judge, evaluation, Mode.UNGRADED, personas,
              django_capture_on_commit_callbacks)
    assert not JudgeRun.objects.exists()
    assert not FeedbackSlot.objects.filter(grade__isnull=False).exists()


def test_trust_taken_back_before_the_grading_pauses_the_run_and_writes_nothing(
        personas, simulated):
    grader = grader_of(personas, simulated)
    Judge.objects.filter(pk=grader.judge.pk).update(counts=True)
    evaluation = evaluation_of(personas.team, simulated)
    run = runs.run_start(judge=Judge.objects.get(pk=grader.judge.pk), evaluation=evaluation,
                         mode=Mode.UNGRADED, started_by=personas.admin)  # not yet graded
    Judge.objects.filter(pk=grader.judge.pk).update(counts=False)
    assert learning.click_run_grade(run_id=run.pk) == 0
    run.refresh_from_db()
    assert run.status == Status.PAUSED and "no longer counts" in run.pause_reason
    assert not FeedbackSlot.objects.filter(grade__isnull=False).exists()
    assert not FeedbackSlot.objects.filter(user=grader.judge.user).exists()


def test_results_below_the_minimum_impressions_get_no_grade(
        personas, simulated, django_capture_on_commit_callbacks):
    grader = grader_of(personas, simulated, min_impressions=4001)
    evaluation = evaluation_of(personas.team, simulated, extra_docs={"query 0": ["unseen"]})
    run = start(grader.judge, evaluation, Mode.SHADOW, personas,
                django_capture_on_commit_callbacks)
    # Every simulated result was shown in exactly 4,000 sessions: none reaches 4,001.
    assert (run.status, run.done_count, run.failed_count) == (Status.DONE, 0, 37)
    item = JudgeRunItem.objects.get(run=run, snapshot__doc_id="unseen")
    assert (item.grade, item.failure) == (None, "few_impressions")
    assert item.failure_detail == ("No grade: 0 impressions in the window; the grader asks "
                                   "for at least 4001.")
    assert not LearnedGrade.objects.filter(grade__isnull=False).exists()


def test_at_the_minimum_exactly_a_grade_is_learned(
        personas, simulated, django_capture_on_commit_callbacks):
    grader = grader_of(personas, simulated, min_impressions=4000)
    evaluation = evaluation_of(personas.team, simulated, extra_docs={"query 0": ["unseen"]})
    run = start(grader.judge, evaluation, Mode.SHADOW, personas,
                django_capture_on_commit_callbacks)
    assert (run.done_count, run.failed_count) == (36, 1)


def test_the_grader_s_settings_are_checked(personas, simulated):
    with pytest.raises(ValidationError) as refused:
        grader_of(personas, simulated, click_model="dbn", min_impressions=0, cuts=[0.5, 0.4])
    assert set(refused.value.message_dict) == {"click_model", "min_impressions", "cuts"}
    assert not Judge.objects.exists()


def test_cuts_that_do_not_fit_the_scale_pause_the_run(
        personas, simulated, django_capture_on_commit_callbacks):
    grader = grader_of(personas, simulated, cuts=[0.5])  # two grades; graded has four
    evaluation = evaluation_of(personas.team, simulated)
    run = start(grader.judge, evaluation, Mode.SHADOW, personas,
                django_capture_on_commit_callbacks)
    assert run.status == Status.PAUSED
    assert "needs 3 cut points; 1 given" in run.pause_reason


def test_a_called_judge_s_form_cannot_make_a_clicks_judge(personas):
    from judges.services import judge_create
    with pytest.raises(ValidationError) as refused:
        judge_create(team=personas.team, by=personas.admin, name="x", provider="clicks",
                     model="pbm")
    assert "behaviour source" in refused.value.message_dict["provider"][0]


def test_an_admin_makes_a_clicks_grader_on_its_page(personas, simulated, client):
    client.force_login(personas.admin)
    page = client.post("/judges/clicks/new/", {
        "name": "Clicks COEC", "source": simulated.source.pk, "click_model": "coec",
        "start_on": "", "end_on": "", "min_impressions": 50, "cuts": "0.1, 0.2, 0.4"})
    assert page.status_code == 302 and page["Location"] == "/judges/"
    grader = Judge.objects.get(name="Clicks COEC").click_grader
    assert (grader.click_model, grader.min_impressions, grader.cuts, grader.source_id) == (
        "coec", 50, [0.1, 0.2, 0.4], simulated.source.pk)
    listed = client.get("/judges/").content.decode()
    assert "Learned from clicks" in listed and "/judges/clicks/new/" in listed


def test_the_page_names_bad_cuts_and_saves_nothing(personas, simulated, client):
    client.force_login(personas.admin)
    page = client.post("/judges/clicks/new/", {
        "name": "Bad", "source": simulated.source.pk, "click_model": "pbm",
        "min_impressions": 10, "cuts": "0.4, 0.2"})
    assert page.status_code == 400 and "Cut points rise strictly." in page.content.decode()
    assert not Judge.objects.exists()


def test_another_team_s_source_is_not_offered(personas, simulated, client):
    theirs = simulated_source(personas.other_team, keywords=1, documents=1, sessions=10)
    client.force_login(personas.admin)
    page = client.post("/judges/clicks/new/", {
        "name": "X", "source": theirs.source.pk, "click_model": "pbm", "min_impressions": 10})
    assert page.status_code == 400 and not Judge.objects.exists()


def test_the_calibration_page_says_how_a_clicks_grader_learns(
        personas, simulated, client, django_capture_on_commit_callbacks):
    grader = grader_of(personas, simulated)
    evaluation = evaluation_of(personas.team, simulated)
    people_grade_the_truth(evaluation, simulated, personas.grader)
    start(grader.judge, evaluation, Mode.SHADOW, personas, django_capture_on_commit_callbacks)
    client.force_login(personas.lead)
    html = client.get(f"/judges/{grader.judge.pk}/calibration/").content.decode()
    assert ("Learned from clicks: Position-based model (EM) on the behaviour source "
            "simulated, all its days; no grade below 10 impressions") in html
    assert '<dd data-testid="kappa">1.000</dd>' in html


def test_the_api_makes_and_lists_clicks_graders(personas, simulated):
    from rest_framework.test import APIClient
    api = APIClient()
    api.force_authenticate(personas.admin)
    made = api.post("/api/v1/click-graders/", {
        "name": "API PBM", "source": simulated.source.pk, "click_model": "pbm",
        "min_impressions": 20}, format="json")
    assert made.status_code == 201
    judge = Judge.objects.get(name="API PBM")
    assert made.json() == {
        "judge": judge.pk, "name": "API PBM", "team": personas.team.pk,
        "source": simulated.source.pk, "click_model": "pbm", "start_on": None,
        "end_on": None, "min_impressions": 20, "cuts": [], "tags": [], "is_active": True,
        "counts": False}
    assert api.get("/api/v1/click-graders/").json()["results"] == [made.json()]
    bad = api.post("/api/v1/click-graders/", {
        "name": "Bad", "source": simulated.source.pk, "click_model": "pbm",
        "cuts": [0.4, 0.2]}, format="json")
    assert bad.status_code == 400 and bad.json() == {"cuts": ["Cut points rise strictly."]}
    theirs = simulated_source(personas.other_team, keywords=1, documents=1, sessions=10)
    assert api.post("/api/v1/click-graders/", {
        "name": "X", "source": theirs.source.pk, "click_model": "pbm"},
        format="json").status_code == 404


def test_a_lead_starts_a_clicks_run_from_the_evaluation_s_run_panel(
        personas, simulated, client, django_capture_on_commit_callbacks):
    grader = grader_of(personas, simulated)
    evaluation = evaluation_of(personas.team, simulated)
    client.force_login(personas.lead)
    assert client.get(f"/evaluations/{evaluation.pk}/judge-runs/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(f"/evaluations/{evaluation.pk}/judge-runs/start/",
                              {"judge": grader.judge.pk, "mode": "shadow"})
    run = JudgeRun.objects.get(judge=grader.judge)
    assert started.status_code == 302 and started["Location"] == f"/judge-runs/{run.pk}/"
    assert (run.status, run.done_count) == (Status.DONE, 36)
    assert client.get(f"/judge-runs/{run.pk}/").status_code == 200


def test_retrying_a_clicks_run_s_failed_items_learns_them_again(
        personas, simulated, django_capture_on_commit_callbacks):
    grader = grader_of(personas, simulated)
    evaluation = evaluation_of(personas.team, simulated, extra_docs={"query 0": ["unseen"]})
    run = start(grader.judge, evaluation, Mode.SHADOW, personas,
                django_capture_on_commit_callbacks)
    assert (run.status, run.done_count, run.failed_count) == (Status.DONE, 36, 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert runs.run_retry_failed(run=run) == 1
    run.refresh_from_db()
    # Still never shown: it fails again, with one record of its evidence, not two.
    assert (run.status, run.done_count, run.failed_count) == (Status.DONE, 36, 1)
    assert LearnedGrade.objects.filter(item__run=run).count() == 37
