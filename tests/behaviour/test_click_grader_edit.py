"""Changing a clicks grader (its page and PATCH on its API detail): the next run learns
with the new settings, the grades learned already keep theirs, a bad change names each
field and saves nothing, and every save leaves one audit record that lists what a clicks
grader is (source, model, days, minimum, cuts), not an LLM judge's settings."""

from datetime import date

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from audit.models import Action, AuditEvent
from behaviour import learning
from behaviour.models import ClickGrader, LearnedGrade
from judges import runs
from judges.models import Judge, JudgeRun
from tests.behaviour.clicks_data import evaluation_of, simulated_source
from tests.behaviour.test_learning import start
from tests.judges.builders import judge_with_account

pytestmark = pytest.mark.django_db

# What the grader of `made` is before any edit, as its form and its API say it.
SAVED = {"click_model": "pbm", "start_on": None, "end_on": None, "min_impressions": 10,
         "cuts": []}


@pytest.fixture
def made(personas):
    simulated = simulated_source(personas.team)
    grader = learning.click_grader_create(team=personas.team, by=personas.admin,
                                          name="Clicks PBM", source=simulated.source,
                                          click_model="pbm")
    return simulated, grader


def _stored(grader: ClickGrader) -> tuple:
    grader = ClickGrader.objects.select_related("judge").get(pk=grader.pk)
    return (grader.judge.name, grader.judge.model, grader.judge.is_active, grader.judge.tags,
            grader.source_id, grader.click_model, grader.start_on, grader.end_on,
            grader.min_impressions, grader.cuts)


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


# --- the service ---------------------------------------------------------------------


def test_the_next_run_learns_with_the_new_settings_and_the_learned_grades_stay(
        personas, made, django_capture_on_commit_callbacks):
    simulated, grader = made
    evaluation = evaluation_of(personas.team, simulated)
    first = start(grader.judge, evaluation, JudgeRun.Mode.SHADOW, personas,
                  django_capture_on_commit_callbacks)
    assert (first.done_count, first.failed_count) == (36, 0)
    learned_before = list(LearnedGrade.objects.filter(item__run=first).order_by("pk").values())

    learning.click_grader_update(grader=grader, by=personas.admin, click_model="coec",
                                 min_impressions=4001)
    # The first run's 36 grades and their evidence are as they were learned.
    assert list(LearnedGrade.objects.filter(item__run=first).order_by("pk").values()) == \
        learned_before
    assert {(row["click_model"], row["min_impressions"]) for row in learned_before} == {
        ("pbm", 10)}
    assert first.items.filter(grade__isnull=False).count() == 36
    # Every simulated result was shown in exactly 4,000 sessions: none reaches 4,001 now.
    second = start(grader.judge, evaluation, JudgeRun.Mode.SHADOW, personas,
                   django_capture_on_commit_callbacks)
    assert (second.done_count, second.failed_count) == (0, 36)
    assert set(LearnedGrade.objects.filter(item__run=second).values_list(
        "click_model", "min_impressions")) == {("coec", 4001)}


def test_a_bad_change_names_every_field_and_changes_nothing(personas, made):
    _simulated, grader = made
    judge_with_account(personas.team, name="Taken")
    theirs = simulated_source(personas.other_team, keywords=1, documents=1, sessions=10)
    before, events = _stored(grader), AuditEvent.objects.count()
    with pytest.raises(ValidationError) as refused:
        learning.click_grader_update(
            grader=grader, by=personas.admin, name="Taken", source=theirs.source,
            click_model="dbn", min_impressions=0, cuts=[0.5, 0.4],
            start_on=date(2026, 3, 2), end_on=date(2026, 3, 1))
    assert refused.value.message_dict == {
        "name": ["The team already has a judge named 'Taken'."],
        "source": ["This behaviour source belongs to another team."],
        "click_model": ["Use one of coec, pbm."],
        "min_impressions": ["A whole number from 1 to 1000000."],
        "cuts": ["Cut points rise strictly."],
        "end_on": ["The window ends before it starts."]}
    assert _stored(grader) == before and AuditEvent.objects.count() == events
    with pytest.raises(ValidationError) as unknown:
        learning.click_grader_update(grader=grader, by=personas.admin, batch_size=3)
    assert unknown.value.message_dict == {"batch_size": ["cannot be changed"]}


def test_each_save_leaves_one_record_of_what_a_clicks_grader_is(personas, made):
    _simulated, grader = made
    [created] = AuditEvent.objects.filter(action=Action.JUDGE_CREATED)
    # No batch size, base URL, prompt, timeout or price: a clicks grader has none. The
    # empty window (None to None) is no change, so it is not listed.
    assert created.changes == {
        "name": [None, "Clicks PBM"], "provider": [None, "clicks"], "model": [None, "pbm"],
        "tags": [None, []], "is_active": [None, True], "counts": [None, False],
        "user": [None, grader.judge.user_id], "source": [None, grader.source_id],
        "click_model": [None, "pbm"], "min_impressions": [None, 10], "cuts": [None, []]}
    learning.click_grader_update(grader=grader, by=personas.admin, min_impressions=20,
                                 click_model="coec", cuts=[0.1, 0.2, 0.4],
                                 name=" Clicks COEC ", tags=["shoes"])
    [changed] = AuditEvent.objects.filter(action=Action.JUDGE_CHANGED)
    assert changed.changes == {
        "name": ["Clicks PBM", "Clicks COEC"], "model": ["pbm", "coec"],
        "click_model": ["pbm", "coec"], "min_impressions": [10, 20],
        "cuts": [[], [0.1, 0.2, 0.4]], "tags": [[], ["shoes"]]}
    assert changed.actor_id == personas.admin.pk
    judge = Judge.objects.select_related("user").get(pk=grader.judge_id)
    assert (judge.name, judge.user.first_name) == ("Clicks COEC", "Clicks COEC")


def test_deactivating_it_pauses_its_running_run(personas, made):
    simulated, grader = made
    evaluation = evaluation_of(personas.team, simulated)
    run = runs.run_start(judge=grader.judge, evaluation=evaluation,
                         mode=JudgeRun.Mode.SHADOW, started_by=personas.admin)
    learning.click_grader_update(grader=grader, by=personas.admin, is_active=False)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.PAUSED


# --- the page ------------------------------------------------------------------------


def test_an_admin_changes_it_on_its_page(personas, made, client):
    simulated, grader = made
    url = f"/judges/clicks/{grader.judge_id}/"
    client.force_login(personas.admin)
    page = client.get(url)
    assert page.status_code == 200
    form = page.context["form"]
    assert {name: form[name].value() for name in SAVED} == {**SAVED, "cuts": ""}
    assert form["source"].value() == simulated.source.pk
    assert form["is_active"].value() is True
    saved = client.post(url, {"name": "Clicks COEC", "source": simulated.source.pk,
                              "click_model": "coec", "start_on": "", "end_on": "",
                              "min_impressions": 50, "cuts": "0.1, 0.2, 0.4",
                              "tags": "shoes, boots", "is_active": "on"})
    assert saved.status_code == 302 and saved["Location"] == "/judges/"
    # Tags are stored as graders' are: normalised, in order.
    assert _stored(grader) == ("Clicks COEC", "coec", True, ["boots", "shoes"],
                               simulated.source.pk, "coec", None, None, 50, [0.1, 0.2, 0.4])
    assert AuditEvent.objects.filter(action=Action.JUDGE_CHANGED).count() == 1
    # The LLM judges' edit address sends a clicks grader here.
    assert client.get(f"/judges/{grader.judge_id}/")["Location"] == url


def test_the_page_names_bad_input_and_saves_nothing(personas, made, client):
    simulated, grader = made
    before = _stored(grader)
    client.force_login(personas.admin)
    page = client.post(f"/judges/clicks/{grader.judge_id}/", {
        "name": "Clicks PBM", "source": simulated.source.pk, "click_model": "pbm",
        "start_on": "2026-03-02", "end_on": "2026-03-01", "min_impressions": 10,
        "cuts": "0.4, 0.2", "is_active": "on"})
    assert page.status_code == 400
    html = page.content.decode()
    assert "Cut points rise strictly." in html and "The window ends before it starts." in html
    assert _stored(grader) == before
    assert not AuditEvent.objects.filter(action=Action.JUDGE_CHANGED).exists()


def test_the_page_is_its_team_s_admins_only(personas, made, client):
    _simulated, grader = made
    url = f"/judges/clicks/{grader.judge_id}/"
    client.force_login(personas.admin)
    assert client.put(url).status_code == 405
    client.force_login(personas.outsider)
    assert client.get(url).status_code == 404
    client.force_login(personas.lead)
    assert client.get(url).status_code == 403
    assert client.post(url, {"name": "Mine", "min_impressions": 1}).status_code == 403
    assert _stored(grader)[0] == "Clicks PBM"
    # An LLM judge is not a clicks grader.
    client.force_login(personas.admin)
    llm = judge_with_account(personas.team, name="Picky")
    assert client.get(f"/judges/clicks/{llm.pk}/").status_code == 404


# --- the API -------------------------------------------------------------------------


def test_the_api_reads_and_changes_it(personas, made):
    simulated, grader = made
    url = f"/api/v1/click-graders/{grader.judge_id}/"
    read = _api(personas.lead).get(url)
    assert read.status_code == 200
    assert read.json() == {
        "judge": grader.judge_id, "name": "Clicks PBM", "team": personas.team.pk,
        "source": simulated.source.pk, **SAVED, "tags": [], "is_active": True,
        "counts": False}
    changed = _api(personas.admin).patch(url, {"min_impressions": 25, "end_on": None,
                                               "cuts": [0.2, 0.5, 0.7]}, format="json")
    assert changed.status_code == 200
    assert changed.json() == {**read.json(), "min_impressions": 25, "cuts": [0.2, 0.5, 0.7]}
    assert _stored(grader)[5:] == ("pbm", None, None, 25, [0.2, 0.5, 0.7])
    [event] = AuditEvent.objects.filter(action=Action.JUDGE_CHANGED)
    assert event.changes == {"min_impressions": [10, 25], "cuts": [[], [0.2, 0.5, 0.7]]}


@pytest.mark.parametrize(("body", "named"), [
    ({"min_impressions": 0}, "min_impressions"),
    ({"click_model": "dbn"}, "click_model"),
    ({"cuts": [0.5, 0.4]}, "cuts"),
    ({"start_on": "2026-03-02", "end_on": "2026-03-01"}, "end_on"),
    ({"source": 999_999}, "source"),
    ({"name": ""}, "name"),
])
def test_the_api_names_the_bad_field_and_changes_nothing(personas, made, body, named):
    _simulated, grader = made
    before = _stored(grader)
    answer = _api(personas.admin).patch(f"/api/v1/click-graders/{grader.judge_id}/", body,
                                        format="json")
    assert answer.status_code == 400 and list(answer.json()) == [named]
    assert _stored(grader) == before
    assert not AuditEvent.objects.filter(action=Action.JUDGE_CHANGED).exists()


def test_another_team_s_source_is_a_bad_source_not_a_hint(personas, made):
    _simulated, grader = made
    theirs = simulated_source(personas.other_team, keywords=1, documents=1, sessions=10)
    answer = _api(personas.admin).patch(f"/api/v1/click-graders/{grader.judge_id}/",
                                        {"source": theirs.source.pk}, format="json")
    assert answer.status_code == 400
    assert answer.json() == {"source": ["The team has no behaviour source with this id."]}


def test_the_api_detail_is_its_team_s_and_changes_are_the_admins(personas, made):
    _simulated, grader = made
    url = f"/api/v1/click-graders/{grader.judge_id}/"
    assert _api(personas.admin).put(url, {}, format="json").status_code == 405
    assert _api(personas.admin).delete(url).status_code == 405
    assert _api(personas.outsider).get(url).status_code == 404
    assert _api(personas.outsider).patch(url, {"min_impressions": 5},
                                         format="json").status_code == 404
    assert _api(personas.grader).get(url).status_code == 403
    assert _api(personas.lead).patch(url, {"min_impressions": 5},
                                     format="json").status_code == 403
    assert _stored(grader)[8] == 10
    llm = judge_with_account(personas.team, name="Picky")
    assert _api(personas.admin).get(f"/api/v1/click-graders/{llm.pk}/").status_code == 404


def test_the_llm_judges_api_sends_a_clicks_grader_s_changes_to_its_own(personas, made):
    _simulated, grader = made
    before = _stored(grader)
    answer = _api(personas.admin).patch(f"/api/v1/judges/{grader.judge_id}/",
                                        {"name": "Renamed"}, format="json")
    assert answer.status_code == 400
    assert answer.json() == {"provider": [
        "A clicks grader is changed on its own edit page or with PATCH "
        "/api/v1/click-graders/<judge id>/."]}
    assert _stored(grader) == before


# --- where it is listed ------------------------------------------------------------------


def test_the_judges_list_describes_each_kind_by_its_own_settings(
        personas, made, client):
    simulated, grader = made
    learning.click_grader_update(grader=grader, by=personas.admin, min_impressions=40,
                                 cuts=[0.06, 0.2, 0.5])
    llm = judge_with_account(personas.team, name="Picky")
    client.force_login(personas.admin)
    html = client.get("/judges/").content.decode()
    assert "<h1>Judges</h1>" in html and "LLM judges</h1>" not in html
    clicks_row = html[html.index(f'data-testid="judge-{grader.judge_id}"'):]
    clicks_row = clicks_row[:clicks_row.index("</tr>")]
    assert "Position-based model (EM)" in clicks_row
    assert ("Source <strong>simulated</strong>, all days; at least 40 impressions; cuts "
            "0.06, 0.2, 0.5") in clicks_row
    assert "Batches of" not in clicks_row
    assert f'href="/judges/clicks/{grader.judge_id}/">Edit</a>' in clicks_row
    llm_row = html[html.index(f'data-testid="judge-{llm.pk}"'):]
    llm_row = llm_row[:llm_row.index("</tr>")]
    assert f"Batches of {llm.batch_size}" in llm_row and "impressions" not in llm_row
    # The grader and its source come with the judges: one more clicks grader, no more
    # queries.
    before = _list_queries(client)
    learning.click_grader_create(team=personas.team, by=personas.admin, name="Second",
                                 source=simulated.source, click_model="coec")
    assert _list_queries(client) == before


def _list_queries(client) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get("/judges/").status_code == 200
    return len(captured)
