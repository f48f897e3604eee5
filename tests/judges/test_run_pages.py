"""The run pages: the evaluation page's judges panel (loaded by htmx), starting a run,
a run's live progress, its actions and its failed pairs; who may see and do what."""

import re

import pytest
from django.urls import reverse

from judges.models import JudgeCall, JudgeRun, JudgeRunItem
from tests.judges.run_builders import call_of, judge_of, priced, run_of
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def evaluation(personas):
    return evaluation_with_slots(personas.team, keywords=2, positions=2)


# --- the evaluation page's panel ---------------------------------------------------------


def test_the_evaluation_page_loads_the_panel_for_leads_only(client, personas, evaluation):
    url = reverse("evaluations:evaluation_detail", args=[evaluation.pk])
    panel = reverse("judges:evaluation_runs", args=[evaluation.pk])
    client.force_login(personas.lead)
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert f'hx-get="{panel}"' in html and 'hx-trigger="load"' in html
    assert "htmx-2.min.js" in html
    client.force_login(personas.grader)
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert panel not in html and "htmx" not in html


def test_the_panel_lists_the_runs_with_their_counts(client, personas, evaluation):
    judge = judge_of(personas.team, name="Picky")
    run = run_of(judge, evaluation, status=JudgeRun.Status.PAUSED, started_by=personas.lead,
                 pair_count=4, done_count=2, failed_count=1)
    run_of(judge_of(personas.team), evaluation_with_slots(personas.team))  # another's
    client.force_login(personas.lead)
    response = client.get(reverse("judges:evaluation_runs", args=[evaluation.pk]), **HTMX)
    assert response.status_code == 200
    assert response.templates[0].name == \
        "judges/_evaluation_runs.html"
    assert list(response.context["runs"]) == [run]
    row = re.search(rf'<tr data-run="{run.pk}">(.*?)</tr>', response.content.decode(),
                    re.DOTALL).group(1)
    cells = [re.sub(r"<[^>]+>", "", cell).strip()
             for cell in re.findall(r"<td>(.*?)</td>", row, re.DOTALL)]
    # The judge's name says which kind it is.
    assert cells[:7] == ["Picky LLM judge", "Shadow: grade everything, counting nothing", "Paused",
                         "2", "1", "1", "lead"]
    assert reverse("judges:run_detail", args=[run.pk]) in row


def test_without_htmx_the_panel_is_a_page_of_its_own(client, personas, evaluation):
    client.force_login(personas.lead)
    response = client.get(reverse("judges:evaluation_runs", args=[evaluation.pk]))
    assert response.status_code == 200
    assert response.templates[0].name == "judges/evaluation_runs.html"
    assert "<html" in response.content.decode()


def test_the_start_form_offers_active_judges_and_disables_counting_modes(client, personas,
                                                                        evaluation):
    judge_of(personas.team, name="Shadowy")
    judge_of(personas.team, name="Asleep", is_active=False)
    judge_of(personas.other_team, name="Foreign")
    client.force_login(personas.lead)
    response = client.get(reverse("judges:evaluation_runs", args=[evaluation.pk]), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Shadowy" in html and "Asleep" not in html and "Foreign" not in html
    # No judge counts yet: only shadow can be picked, and the panel says why.
    assert re.search(r'<option value="ungraded"[^>]*disabled', html)
    assert re.search(r'<option value="fill"[^>]*disabled', html)
    assert not re.search(r'<option value="shadow"[^>]*disabled', html)
    assert "Needs a judge that counts" in html and "Not yet counting: Shadowy" in html


def test_a_counting_judge_enables_the_counting_modes_for_itself(client, personas, evaluation):
    trusted = judge_of(personas.team, name="Trusted", counts=True)
    untried = judge_of(personas.team, name="Untried")
    client.force_login(personas.lead)
    response = client.get(reverse("judges:evaluation_runs", args=[evaluation.pk]), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert not re.search(r'<option value="fill"[^>]*disabled', html)
    assert f'<option value="{trusted.pk}" data-counts="1"' in html
    assert f'<option value="{untried.pk}" data-counts="0"' in html
    assert "Not yet counting: Untried" in html


def test_a_team_without_judges_is_told_so(client, personas, evaluation):
    client.force_login(personas.lead)
    response = client.get(reverse("judges:evaluation_runs", args=[evaluation.pk]), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-testid="no-judges"' in html and "<form" not in html


def test_a_start_without_a_judge_names_the_field_and_starts_nothing(client, personas,
                                                                    evaluation):
    client.force_login(personas.lead)
    judge_of(personas.team)
    response = client.post(reverse("judges:run_start", args=[evaluation.pk]),
                           {"mode": "shadow"})
    assert response.status_code == 400
    assert response.context["form"].errors["judge"]
    assert not JudgeRun.objects.exists()


def test_a_judge_of_another_team_is_not_a_choice(client, personas, evaluation):
    foreign = judge_of(personas.other_team)
    client.force_login(personas.lead)
    response = client.post(reverse("judges:run_start", args=[evaluation.pk]),
                           {"judge": foreign.pk, "mode": "shadow"})
    assert response.status_code == 400
    assert "judge" in response.context["form"].errors
    assert not JudgeRun.objects.exists()


# --- the run page ------------------------------------------------------------------------


@pytest.fixture
def run(personas, evaluation):
    judge = priced(judge_of(personas.team, name="Picky"))
    return run_of(judge, evaluation, started_by=personas.lead, pair_count=4, done_count=2,
                  failed_count=1, cached_count=1, call_count=3, tokens_in=1000,
                  tokens_out=200)


def test_the_run_page_shows_progress_figures_and_a_bar(client, personas, run):
    client.force_login(personas.lead)
    response = client.get(reverse("judges:run_detail", args=[run.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    figures = dict(re.findall(r'<dd data-field="(\w+)">([^<]*)', html))
    assert {name: figures[name].strip() for name in ("pairs", "done", "failed", "left",
                                                     "cached", "calls", "tokens")} == {
        "pairs": "4", "done": "2", "failed": "1", "left": "1", "cached": "1", "calls": "3",
        "tokens": "1000 / 200"}
    assert 'class="progress-done" data-width-percent="50"' in html
    assert 'data-width-percent="25"' in html  # the failed part
    assert " style=" not in html
    assert "Grade what is ungraded" not in html and "Shadow: grade everything" in html


def test_a_running_run_polls_every_two_seconds_a_stopped_one_does_not(client, personas, run):
    client.force_login(personas.lead)
    url = reverse("judges:run_detail", args=[run.pk])
    partial = client.get(url, **HTMX)
    assert partial.status_code == 200
    assert [template.name for template in partial.templates] == [
        "judges/_run_live.html", "judges/_run_progress.html"]
    assert f'hx-get="{url}" hx-trigger="every 2s" hx-swap="outerHTML"' in \
        partial.content.decode()
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE)
    response = client.get(url, **HTMX)
    assert response.status_code == 200
    stopped = response.content.decode()
    assert "hx-trigger" not in stopped and 'data-status="done"' in stopped


@pytest.mark.parametrize(("status", "buttons"), [
    (JudgeRun.Status.RUNNING, ["pause", "cancel", "retry"]),
    (JudgeRun.Status.PAUSED, ["resume", "cancel", "retry"]),
    (JudgeRun.Status.DONE, ["retry"]),
    (JudgeRun.Status.CANCELLED, []),
])
def test_the_run_page_offers_the_actions_its_status_allows(client, personas, run, status,
                                                           buttons):
    JudgeRun.objects.filter(pk=run.pk).update(status=status)
    client.force_login(personas.lead)
    response = client.get(reverse("judges:run_detail", args=[run.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    offered = re.findall(rf'action="/judge-runs/{run.pk}/(\w+)/"', html)
    assert offered == buttons


def test_the_run_page_lists_failed_pairs_with_their_call(client, personas, run):
    snapshot_rows = list(run.evaluation.keywords.order_by("position").values_list(
        "pk", "snapshots__pk", "snapshots__doc_id"))
    call = call_of(run.judge, run=run, status="ok")
    keyword_id, snapshot_id, doc_id = snapshot_rows[1]
    JudgeRunItem.objects.create(run=run, snapshot_id=snapshot_id, keyword_id=keyword_id,
                                status=JudgeRunItem.Status.FAILED, failure="missing",
                                failure_detail="no grade for this document", call=call)
    JudgeRunItem.objects.create(run=run, snapshot_id=snapshot_rows[0][1],
                                keyword_id=snapshot_rows[0][0],
                                status=JudgeRunItem.Status.DONE, grade=1)
    client.force_login(personas.lead)
    response = client.get(reverse("judges:run_detail", args=[run.pk]))
    assert response.status_code == 200
    items = response.context["failed_items"]
    assert [(item.keyword, item.doc_id, item.failure, item.call_id) for item in items] == [
        ("query 1", doc_id, "missing", call.pk)]
    html = response.content.decode()
    assert "no grade for this document" in html
    assert reverse("judges:call_detail", args=[call.pk]) in html


def test_the_run_page_links_the_runs_calls(client, personas, run):
    client.force_login(personas.lead)
    response = client.get(reverse("judges:run_detail", args=[run.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert f'{reverse("judges:judge_calls", args=[run.judge_id])}?run={run.pk}' in html


# --- access ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "method"), [
    ("judges:run_detail", "get"), ("judges:run_pause", "post"), ("judges:run_resume", "post"),
    ("judges:run_cancel", "post"), ("judges:run_retry", "post"),
])
def test_graders_get_403_and_other_teams_404_on_a_run(client, personas, run, name, method):
    url = reverse(name, args=[run.pk])
    client.force_login(personas.grader)
    assert getattr(client, method)(url).status_code == 403
    client.force_login(personas.outsider)
    assert getattr(client, method)(url).status_code == 404
    assert JudgeRun.objects.get(pk=run.pk).status == JudgeRun.Status.RUNNING


@pytest.mark.parametrize("name", ["judges:evaluation_runs", "judges:run_start"])
def test_graders_get_403_and_other_teams_404_on_the_panel(client, personas, evaluation, name):
    url = reverse(name, args=[evaluation.pk])
    client.force_login(personas.grader)
    assert client.get(url).status_code == 403
    client.force_login(personas.outsider)
    assert client.get(url).status_code == 404


def test_actions_refuse_get(client, personas, run):
    client.force_login(personas.lead)
    assert client.get(reverse("judges:run_pause", args=[run.pk])).status_code == 405
    assert not JudgeCall.objects.exists()


def test_the_panel_and_the_run_page_read_in_a_constant_number_of_queries(
        client, personas, evaluation, run, django_assert_max_num_queries):
    for _ in range(5):
        run_of(judge_of(personas.team), evaluation, status=JudgeRun.Status.DONE)
    client.force_login(personas.lead)
    with django_assert_max_num_queries(10):
        panel = client.get(reverse("judges:evaluation_runs", args=[evaluation.pk]), **HTMX)
    with django_assert_max_num_queries(10):
        page = client.get(reverse("judges:run_detail", args=[run.pk]))
    assert (panel.status_code, page.status_code) == (200, 200)
