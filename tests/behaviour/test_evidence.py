"""What a learned grade rests on, where people look: the calibration page of a clicks
grader (the results furthest from the people's grades first), a clicks run's page, and
the run's export of every learned grade with its evidence (CSV and JSON Lines)."""

import csv
import io
import json

import pytest
from django.template import Context, Template
from django.urls import reverse
from rest_framework.test import APIClient

from behaviour import evidence, learning
from behaviour.models import BehaviourCount
from judges import runs
from judges.models import JudgeRun
from judgments.models import FeedbackSlot
from tests.behaviour.clicks_data import evaluation_of, simulated_source
from tests.behaviour.test_learning import people_grade_the_truth
from tests.judges.builders import judge_with_account
from tests.judges.run_builders import run_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def learned(personas, django_capture_on_commit_callbacks):
    """A finished shadow run of a PBM grader over 6 simulated keywords of 6 results (each
    learned at its true grade) and one result the log never showed; the people graded
    the truth except where `disagree` says."""
    simulated = simulated_source(personas.team)
    grader = learning.click_grader_create(team=personas.team, by=personas.admin,
                                          name="Clicks PBM", source=simulated.source,
                                          click_model="pbm")
    evaluation = evaluation_of(personas.team, simulated, extra_docs={"query 0": ["unseen"]})
    people_grade_the_truth(evaluation, simulated, personas.grader)
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_start(judge=grader.judge, evaluation=evaluation,
                             mode=JudgeRun.Mode.SHADOW, started_by=personas.admin)
    run.refresh_from_db()
    assert (run.status, run.done_count, run.failed_count) == ("done", 36, 1)
    return simulated, grader, evaluation, run


def _person_grades(evaluation, person, changes: dict[tuple[str, str], int]) -> None:
    for (keyword, doc), grade in changes.items():
        assert FeedbackSlot.objects.filter(
            evaluation=evaluation, keyword__normalized_text=keyword,
            snapshot__doc_id=doc).update(user=person, grade=grade) == 1


def _truth_at(simulated, grade: int) -> list[tuple[str, str]]:
    return sorted(pair for pair, true in simulated.truth.items() if true == grade)


def _sums(source, keyword: str, doc: str) -> tuple[int, int]:
    """The oracle: the source's stored counts of the result, summed over positions."""
    rows = BehaviourCount.objects.filter(source=source, keyword=keyword, doc_id=doc)
    return sum(row.impressions for row in rows), sum(row.clicks for row in rows)


def test_the_calibration_page_shows_the_results_furthest_from_the_people_first(
        personas, learned, client):
    simulated, grader, evaluation, run = learned
    three_off = _truth_at(simulated, 0)[0]  # learned 0, the person says 3
    two_off = _truth_at(simulated, 3)[0]  # learned 3, the person says 1
    _person_grades(evaluation, personas.grader, {three_off: 3, two_off: 1})
    client.force_login(personas.lead)
    page = client.get(reverse("judges:calibration", args=[grader.judge.pk]))
    assert page.status_code == 200
    shown = page.context["learned"]
    assert (shown.run, shown.total, len(shown.rows)) == (run, 37, evidence.CALIBRATION_ROWS)
    first, second, third = shown.rows[:3]
    impressions, clicks = _sums(simulated.source, *three_off)
    assert (first.keyword, first.doc_id, first.grade, first.people_mean) == (
        three_off[0], three_off[1], 0, 3.0)
    assert (first.impressions, first.clicks) == (impressions, clicks) == (4000, clicks)
    assert first.click_through == clicks / 4000
    assert (second.keyword, second.doc_id, second.grade, second.people_mean) == (
        two_off[0], two_off[1], 3, 1.0)
    # Then the agreeing results (distance 0), in the evaluation's order.
    assert third.people_mean == third.grade
    html = page.content.decode()
    assert 'data-testid="learned-evidence"' in html
    assert (f"<tr><td>{three_off[0]}</td><td>{three_off[1]}</td><td class=\"num\">"
            f"{first.position}</td><td class=\"num\">4000</td><td class=\"num\">{clicks}"
            f"</td><td class=\"num\">{clicks / 4000:.3f}</td>") in html
    assert reverse("behaviour:run_learned_csv", args=[run.pk]) in html


def test_the_unseen_result_comes_last_without_a_grade(personas, learned):
    _simulated, grader, evaluation, _run = learned
    shown = evidence.calibration_evidence(judge=grader.judge, evaluation=evaluation,
                                          limit=100)
    assert len(shown.rows) == 37
    last = shown.rows[-1]
    assert (last.doc_id, last.impressions, last.clicks, last.relevance, last.grade,
            last.click_through) == ("unseen", 0, 0, None, None, None)
    assert last.relevance_shown == "—"
    assert evidence.Evidence(keyword="k", doc_id="d", position=1, impressions=9, clicks=0,
                             relevance=1.3e-168, grade=0).relevance_shown == "0.000"


def test_an_llm_judge_s_pages_show_no_evidence_and_its_export_is_a_header(
        personas, learned, client):
    evaluation = learned[2]
    judge = judge_with_account(personas.team, name="Picky")
    run = run_of(judge, evaluation, status=JudgeRun.Status.DONE)
    client.force_login(personas.lead)
    for url in (reverse("judges:calibration", args=[judge.pk]),
                reverse("judges:run_detail", args=[run.pk])):
        page = client.get(url)
        assert page.status_code == 200 and "learned-evidence" not in page.content.decode()
    response = client.get(reverse("behaviour:run_learned_csv", args=[run.pk]))
    assert b"".join(response.streaming_content).decode() == (
        ",".join(evidence.EXPORT_FIELDS) + "\n")


def test_a_clicks_run_s_page_shows_its_first_learned_grades_in_order(
        personas, learned, client):
    simulated, _grader, _evaluation, run = learned
    client.force_login(personas.lead)
    page = client.get(reverse("judges:run_detail", args=[run.pk]))
    shown = page.context["learned"]
    assert shown.total == 37
    assert [(row.keyword, row.doc_id) for row in shown.rows[:7]] == [
        ("query 0", f"d{doc}") for doc in range(6)] + [("query 0", "unseen")]
    impressions, clicks = _sums(simulated.source, "query 0", "d0")
    assert (shown.rows[0].impressions, shown.rows[0].clicks) == (impressions, clicks)
    assert shown.rows[0].grade == simulated.truth["query 0", "d0"]
    assert reverse("behaviour:run_learned_jsonl", args=[run.pk]) in page.content.decode()


def test_the_export_has_every_learned_grade_with_its_evidence(personas, learned, client):
    simulated, _grader, _evaluation, run = learned
    client.force_login(personas.lead)
    response = client.get(reverse("behaviour:run_learned_csv", args=[run.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="judge-run-{run.pk}-learned.csv"')
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 37
    assert list(rows[0]) == list(evidence.EXPORT_FIELDS)
    for row in rows[:6] + rows[7:]:
        impressions, clicks = _sums(simulated.source, row["keyword"], row["doc_id"])
        assert (int(row["impressions"]), int(row["clicks"])) == (impressions, clicks)
        assert int(row["grade"]) == simulated.truth[row["keyword"], row["doc_id"]]
        assert (row["click_model"], row["source"], row["min_impressions"], row["status"],
                row["start_on"], row["failure"]) == ("pbm", "simulated", "10", "done", "", "")
        assert float(row["click_through"]) == clicks / impressions
    assert {key: rows[6][key] for key in ("doc_id", "impressions", "grade", "relevance",
                                          "status", "failure")} == {
        "doc_id": "unseen", "impressions": "0", "grade": "", "relevance": "",
        "status": "failed", "failure": "few_impressions"}

    lines = b"".join(client.get(reverse("behaviour:run_learned_jsonl", args=[run.pk]))
                     .streaming_content).decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 37
    first = records[0]
    stored = run.items.get(snapshot__doc_id="d0", keyword__normalized_text="query 0").learned
    assert first == {
        "keyword": "query 0", "doc_id": "d0", "position": 1, "status": "done",
        "grade": simulated.truth["query 0", "d0"], "impressions": stored.impressions,
        "clicks": stored.clicks, "click_through": stored.clicks / stored.impressions,
        "relevance": stored.relevance, "click_model": "pbm", "source": "simulated",
        "start_on": None, "end_on": None, "min_impressions": 10, "failure": ""}
    assert (stored.impressions, stored.clicks) == _sums(simulated.source, "query 0", "d0")


def test_the_export_is_the_run_s_readers_only(personas, learned, client):
    run = learned[3]
    url = reverse("behaviour:run_learned_csv", args=[run.pk])
    client.force_login(personas.outsider)
    assert client.get(url).status_code == 404
    client.force_login(personas.grader)
    assert client.get(url).status_code == 403
    client.force_login(personas.lead)
    assert client.post(url).status_code == 405


def test_the_calibration_section_costs_a_fixed_number_of_queries(
        personas, learned, django_assert_num_queries):
    grader, evaluation = learned[1], learned[2]
    template = Template("{% load behaviour_evidence %}"
                        "{% learned_evidence_of_calibration judge evaluation %}")
    # The run with its grader and source, the 25 rows with the people's means, the count.
    with django_assert_num_queries(3):
        html = template.render(Context({"judge": grader.judge, "evaluation": evaluation}))
    assert html.count("<tr><td>") == evidence.CALIBRATION_ROWS


def test_the_api_pages_every_learned_grade_with_its_evidence(personas, learned):
    simulated, grader, _evaluation, run = learned
    api = APIClient()
    api.force_authenticate(personas.lead)
    url = f"/api/v1/judge-runs/{run.pk}/learned/"
    first = api.get(url, {"page_size": 10})
    assert first.status_code == 200
    body = first.json()
    assert (body["count"], len(body["results"]), body["previous"]) == (37, 10, None)
    impressions, clicks = _sums(simulated.source, "query 0", "d0")
    stored = run.items.get(snapshot__doc_id="d0", keyword__normalized_text="query 0").learned
    assert body["results"][0] == {
        "keyword": "query 0", "doc_id": "d0", "position": 1, "status": "done",
        "grade": simulated.truth["query 0", "d0"], "impressions": impressions,
        "clicks": clicks, "click_through": clicks / impressions,
        "relevance": stored.relevance, "click_model": "pbm", "source": "simulated",
        "start_on": None, "end_on": None, "min_impressions": 10, "failure": ""}
    assert body["results"][6] | {"keyword": "-"} == {
        "keyword": "-", "doc_id": "unseen", "position": 7, "status": "failed", "grade": None,
        "impressions": 0, "clicks": 0, "click_through": None, "relevance": None,
        "click_model": "pbm", "source": "simulated", "start_on": None, "end_on": None,
        "min_impressions": 10, "failure": "few_impressions"}
    # The pages together are the JSON Lines export, in its order.
    last = api.get(url, {"page_size": 10, "page": 4}).json()
    assert (len(last["results"]), last["next"]) == (7, None)
    assert [record["doc_id"] for record in body["results"][:7]] == [
        "d0", "d1", "d2", "d3", "d4", "d5", "unseen"]
    exported = list(evidence.export_records(run=run))
    assert last["results"] == exported[30:]
    # Changing the grader changes nothing the run learned.
    learning.click_grader_update(grader=grader, by=personas.admin, click_model="coec",
                                 min_impressions=99)
    assert api.get(url, {"page_size": 10}).json()["results"] == body["results"]


def test_the_api_of_learned_grades_is_the_run_s_readers_only(personas, learned):
    run = learned[3]
    url = f"/api/v1/judge-runs/{run.pk}/learned/"
    api = APIClient()
    api.force_authenticate(personas.outsider)
    assert api.get(url).status_code == 404
    api.force_authenticate(personas.grader)
    assert api.get(url).status_code == 403
    api.force_authenticate(personas.lead)
    assert api.post(url, {}, format="json").status_code == 405
    assert api.get(url, {"page": 9}).status_code == 404  # past the last page
    assert api.get("/api/v1/judge-runs/999999/learned/").status_code == 404


def test_an_llm_judge_s_run_has_no_learned_grades_in_the_api(personas, learned):
    judge = judge_with_account(personas.team, name="Picky")
    run = run_of(judge, learned[2], status=JudgeRun.Status.DONE)
    api = APIClient()
    api.force_authenticate(personas.lead)
    assert api.get(f"/api/v1/judge-runs/{run.pk}/learned/").json() == {
        "count": 0, "next": None, "previous": None, "results": []}
