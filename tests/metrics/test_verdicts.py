"""Regression verdicts over stored keyword values: the service, the listener on `finished`,
the gate API and `manage.py evaluate --evaluation`."""

import html
import io
from fractions import Fraction

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from evaluations.events import By
from evaluations.models import Evaluation, EvaluationMetric, Keyword
from evaluations.services import lifecycle
from metrics.models import KeywordMetricValue, RegressionVerdict, TeamBaseline
from metrics.reports.verdicts import regression_verdict_compute, regression_verdict_create
from metrics_engine.verdicts import VerdictRule
from notifications.models import Notification
from searchtweak.services import api_token_create
from tests.metrics.builders import build_evaluation
from tests.metrics_engine.exact_bootstrap import bootstrap_interval_atoms

pytestmark = pytest.mark.django_db

TEXTS = [f"Keyword {n}" for n in range(1, 11)]
BASE = [0.5, 0.6, 0.7, 0.8, 0.9, 0.4, 0.3, 0.6, 0.7, 0.5]
# Every keyword drops, "Keyword 4" most: a regression any test finds.
DROPS = [0.1, 0.2, 0.1, 0.4, 0.1, 0.2, 0.1, 0.1, 0.2, 0.1]
NDCG = ("ndcg", 10, {})


def evaluation_with_values(team, values, *, docs="abc", scale="graded",
                           metrics=(NDCG,), status=Evaluation.Status.FINISHED,
                           extra_metric_values=None) -> Evaluation:
    """An evaluation of TEXTS whose first metric has these stored values (None: no value);
    every keyword returned the documents `docs`."""
    evaluation = build_evaluation(team=team, scale=scale, keywords={t: list(docs) for t in TEXTS},
                                  metrics=list(metrics), status=status)
    configs = list(EvaluationMetric.objects.filter(evaluation=evaluation).order_by("position"))
    keywords = {k.text: k for k in Keyword.objects.filter(evaluation=evaluation)}
    rows = [KeywordMetricValue(keyword=keywords[text], metric=configs[0], value=value)
            for text, value in zip(TEXTS, values, strict=True)]
    for index, other in (extra_metric_values or {}).items():
        rows += [KeywordMetricValue(keyword=keywords[text], metric=configs[index], value=value)
                 for text, value in zip(TEXTS, other, strict=True)]
    KeywordMetricValue.objects.bulk_create(rows)
    return evaluation


def worse() -> list[float]:
    return [b - d for b, d in zip(BASE, DROPS, strict=True)]


@pytest.fixture
def baseline(personas):
    return evaluation_with_values(personas.team, BASE, docs="abc")


def api_as(user) -> APIClient:
    _, key = api_token_create(user=user, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


# --- the service ---------------------------------------------------------------------------


def test_a_worse_run_is_regressed_with_hand_computed_numbers(personas, baseline):
    run = evaluation_with_values(personas.team, worse(), docs="cba")
    verdict = regression_verdict_create(evaluation=run, baseline=baseline, rule=VerdictRule(),
                                        source=RegressionVerdict.Source.GATE)
    assert verdict.verdict == RegressionVerdict.Verdict.REGRESSED
    [metric] = verdict.metrics
    assert metric["mean_delta"] == pytest.approx(-sum(DROPS) / 10)  # -0.16
    # The drops in tenths are {1 x6, 2 x3, 4}: the exact bootstrap distribution of the mean
    # of ten draws has 0.6 % at 0.10 and 3.6 % up to 0.11, 95.9 % up to 0.21 and 97.8 % up
    # to 0.22, so the 95 % interval runs between those atoms.
    assert bootstrap_interval_atoms([-Fraction(d) / 10 for d in (1, 2, 1, 4, 1, 2, 1, 1, 2, 1)]
                                    ) == (Fraction(-22, 100), Fraction(-11, 100))
    assert (metric["ci_low"], metric["ci_high"]) == (pytest.approx(-0.22), pytest.approx(-0.11))
    # One metric: Holm leaves p alone. Ten drops of one sign: 2 of 2^10 flips as extreme,
    # estimated from 10,000 draws (standard error 0.0004).
    assert metric["p"] == metric["p_adjusted"]
    assert metric["p"] == pytest.approx(2 / 1024, abs=0.0015)
    assert (metric["covered_count"], metric["shared_count"], metric["coverage"]) == (10, 10, 1.0)
    assert metric["worst"][0] == {"keyword": "keyword 4", "delta": pytest.approx(-0.4)}
    assert verdict.reasons == [
        "Regressed: 1 of 1 metric got worse.",
        "nDCG@10 fell 0.160 (95 % CI \u22120.220\u2026\u22120.110, "
        f"p = {metric['p']:.3f} after Holm) over 10 of 10 keywords; worst: 'Keyword 4' "
        "\u22120.40.",
    ]
    assert verdict.baseline == baseline and verdict.baseline_name == baseline.name
    assert verdict.rule == {"min_coverage": 0.9, "min_shared_keywords": 5, "threshold": None,
                            "alpha": 0.05, "segments": [], "weighted": False, "metrics": []}
    assert metric["segments"] == []


def test_a_better_run_is_improved(personas, baseline):
    better = [b + d / 2 for b, d in zip(BASE, DROPS, strict=True)]
    run = evaluation_with_values(personas.team, better, docs="cba")
    result = regression_verdict_compute(evaluation=run, baseline=baseline, rule=VerdictRule())
    assert result.verdict == "improved"
    assert result.outcome.reasons[1].endswith("best: 'Keyword 4' +0.20.")


def test_the_same_values_are_no_change(personas, baseline):
    run = evaluation_with_values(personas.team, BASE, docs="cba")
    result = regression_verdict_compute(evaluation=run, baseline=baseline, rule=VerdictRule())
    assert result.verdict == "no_change"
    assert result.outcome.reasons[1].startswith("nDCG@10 did not move (95 % CI +0.000\u2026"
                                                "+0.000, p = 1.000 after Holm) over 10 of 10")


def test_half_the_keywords_with_a_value_is_undecided(personas, baseline):
    run = evaluation_with_values(personas.team, worse()[:5] + [None] * 5, docs="cba")
    result = regression_verdict_compute(evaluation=run, baseline=baseline, rule=VerdictRule())
    assert result.verdict == "undecided"
    assert result.outcome.reasons[1] == (
        "Undecided: nDCG@10: only 5 of 10 keywords have a value (50 %), below the minimum 90 %.")
    # A rule that accepts half decides: five drops of one sign are 2 of 2^5 sign flips,
    # p ≈ 0.06, which chance produces.
    result = regression_verdict_compute(evaluation=run, baseline=baseline,
                                        rule=VerdictRule(min_coverage=0.5))
    assert result.verdict == "no_change"
    assert result.outcome.metrics[0].measure.p == pytest.approx(2 / 32, abs=0.01)


def test_too_few_shared_keywords_is_undecided(personas, baseline):
    run = evaluation_with_values(personas.team, worse(), docs="cba")
    result = regression_verdict_compute(evaluation=run, baseline=baseline,
                                        rule=VerdictRule(min_shared_keywords=11))
    assert result.verdict == "undecided"
    assert "only 10 keywords with a value in both" in result.outcome.reasons[1]


def test_identical_rankings_are_never_regressed(personas, baseline):
    # The same documents in the same order for every keyword; only the grades moved.
    run = evaluation_with_values(personas.team, worse(), docs="abc")
    result = regression_verdict_compute(evaluation=run, baseline=baseline, rule=VerdictRule())
    assert result.verdict == "no_change"
    assert "same results, cannot differ" in result.outcome.reasons[1]
    assert result.outcome.reasons[-1] == (
        "The rankings are identical (RBO 1) on every shared keyword.")


def test_a_threshold_keeps_a_small_drop_from_alerting(personas, baseline):
    run = evaluation_with_values(personas.team, [b - 0.005 for b in BASE], docs="cba")
    assert regression_verdict_compute(evaluation=run, baseline=baseline,
                                      rule=VerdictRule()).verdict == "regressed"
    result = regression_verdict_compute(evaluation=run, baseline=baseline,
                                        rule=VerdictRule(threshold=0.01))
    assert result.verdict == "no_change"
    assert result.outcome.reasons[1].endswith("no change, within the threshold 0.010.")


def test_metrics_only_one_side_has_are_skipped_and_said(personas, baseline):
    run = evaluation_with_values(personas.team, worse(), docs="cba",
                                 metrics=(NDCG, ("precision", 5, {})))
    result = regression_verdict_compute(evaluation=run, baseline=baseline, rule=VerdictRule())
    assert [m.measure.label for m in result.outcome.metrics] == ["nDCG@10"]
    assert result.outcome.reasons[-1] == "P@5 is configured in the run only: not compared."


def test_holm_corrects_across_the_metrics(personas):
    # Two metrics; the second drops on 6 keywords and rises on 4, a weak signal.
    mixed = [-0.1, -0.1, -0.1, -0.1, -0.1, -0.1, 0.05, 0.05, 0.05, 0.05]
    metrics = (NDCG, ("precision", 10, {}))
    baseline = evaluation_with_values(personas.team, BASE, docs="abc", metrics=metrics,
                                      extra_metric_values={1: BASE})
    run = evaluation_with_values(
        personas.team, worse(), docs="cba", metrics=metrics,
        extra_metric_values={1: [b + m for b, m in zip(BASE, mixed, strict=True)]})
    result = regression_verdict_compute(evaluation=run, baseline=baseline, rule=VerdictRule())
    first, second = result.outcome.metrics
    low, high = sorted([first.measure.p, second.measure.p])
    # Holm: the smaller p times 2, the larger max(that, itself).
    assert first.p_adjusted == pytest.approx(min(1.0, 2 * low))
    assert second.p_adjusted == pytest.approx(max(min(1.0, 2 * low), high))


def test_a_run_whose_every_fetch_failed_is_undecided(personas, baseline):
    run = evaluation_with_values(personas.team, [None] * 10, docs="")
    Keyword.objects.filter(evaluation=run).update(fetch_status=Keyword.FetchStatus.FAILED)
    verdict = regression_verdict_create(evaluation=run, baseline=baseline, rule=VerdictRule(),
                                        source=RegressionVerdict.Source.GATE)
    assert verdict.verdict == "undecided"
    assert verdict.reasons == [
        "Undecided: 1 of 1 metric could not be measured.",
        "Undecided: nDCG@10: only 0 of 10 keywords have a value (0 %), below the minimum 90 %.",
        "10 of 10 keywords of the run failed to fetch (every keyword): they have no value.",
    ]


def test_a_baseline_on_another_scale_is_refused_and_nothing_saved(personas, baseline):
    run = evaluation_with_values(personas.team, worse(), docs="cba", scale="binary")
    with pytest.raises(ValidationError) as error:
        regression_verdict_create(evaluation=run, baseline=baseline, rule=VerdictRule(),
                                  source=RegressionVerdict.Source.GATE)
    assert error.value.message_dict == {"baseline": [
        f"The baseline '{baseline.name}' is graded on the graded scale, the run on binary: "
        "their values cannot be compared."]}
    assert not RegressionVerdict.objects.exists()


def test_itself_or_another_teams_evaluation_is_no_baseline(personas, baseline):
    foreign = evaluation_with_values(personas.other_team, BASE)
    for other, message in ((baseline, "An evaluation cannot be its own baseline."),
                           (foreign, f"No evaluation {foreign.pk} in this team.")):
        with pytest.raises(ValidationError) as error:
            regression_verdict_create(evaluation=baseline, baseline=other, rule=VerdictRule(),
                                      source=RegressionVerdict.Source.GATE)
        assert error.value.message_dict == {"baseline": [message]}
    assert not RegressionVerdict.objects.exists()


# --- when an evaluation finishes -----------------------------------------------------------


def test_finishing_stores_a_verdict_against_the_team_baseline(
        personas, baseline, django_capture_on_commit_callbacks):
    TeamBaseline.objects.create(team=personas.team, evaluation=baseline)
    run = evaluation_with_values(personas.team, worse(), docs="cba",
                                 status=Evaluation.Status.ACTIVE)
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_finish(evaluation=run, by=By.USER, user=personas.lead)
    verdict = RegressionVerdict.objects.get(evaluation=run)
    assert (verdict.verdict, verdict.source, verdict.baseline) == (
        "regressed", "finished", baseline)
    # The team hears of it: one "run regressed" per member (in-app is on by default).
    members = set(personas.team.memberships.values_list("user_id", flat=True))
    regressed = Notification.objects.filter(team=personas.team, event="run_regressed")
    assert set(regressed.values_list("user_id", flat=True)) == members
    assert regressed.count() == len(members)
    text = regressed.first().text
    assert text.startswith(f"“{run.name}” against “{baseline.name}”: ") and "fell" in text


def test_finishing_without_a_baseline_or_as_the_baseline_stores_nothing(
        personas, baseline, django_capture_on_commit_callbacks):
    run = evaluation_with_values(personas.team, worse(), docs="cba",
                                 status=Evaluation.Status.ACTIVE)
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_finish(evaluation=run)
    assert not RegressionVerdict.objects.exists()


def test_a_crashing_verdict_does_not_undo_the_finish(
        personas, baseline, django_capture_on_commit_callbacks, monkeypatch, caplog):
    from metrics.reports import verdicts

    def crash(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(verdicts, "regression_verdict_create", crash)
    TeamBaseline.objects.create(team=personas.team, evaluation=baseline)
    run = evaluation_with_values(personas.team, worse(), docs="cba",
                                 status=Evaluation.Status.ACTIVE)
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.evaluation_finish(evaluation=run)
    run.refresh_from_db()
    assert run.status == Evaluation.Status.FINISHED
    assert not RegressionVerdict.objects.exists()
    assert f"the verdict of evaluation {run.pk} failed" in caplog.text


# --- the gate API --------------------------------------------------------------------------


def gate_url(evaluation) -> str:
    return f"/api/v1/evaluations/{evaluation.pk}/gate/"


def test_the_gate_fails_a_regressed_run_against_the_team_baseline(personas, baseline):
    TeamBaseline.objects.create(team=personas.team, evaluation=baseline)
    run = evaluation_with_values(personas.team, worse(), docs="cba")
    response = api_as(personas.lead).post(gate_url(run), {}, format="json")
    assert response.status_code == 200
    body = response.json()
    stored = RegressionVerdict.objects.get()
    assert (body["verdict"], body["passed"], body["verdict_id"]) == ("regressed", False,
                                                                     stored.pk)
    assert body["reasons"] == stored.reasons
    assert body["metrics"][0]["label"] == "nDCG@10"
    assert (stored.source, stored.created_by) == ("gate", personas.lead)


def test_the_gate_passes_an_undecided_run_unless_told_otherwise(personas, baseline):
    run = evaluation_with_values(personas.team, worse()[:5] + [None] * 5, docs="cba")
    client = api_as(personas.lead)
    body = client.post(gate_url(run), {"baseline": baseline.pk}, format="json").json()
    assert (body["verdict"], body["passed"]) == ("undecided", True)
    body = client.post(gate_url(run), {"baseline": baseline.pk, "undecided": "fail"},
                       format="json").json()
    assert (body["verdict"], body["passed"]) == ("undecided", False)
    body = client.post(gate_url(run), {"baseline": baseline.pk, "min_coverage": 0.5,
                                       "threshold": 0.5, "metrics": ["ndcg@10"]},
                       format="json").json()
    assert (body["verdict"], body["passed"]) == ("no_change", True)
    assert body["rule"] == {"min_coverage": 0.5, "min_shared_keywords": 5, "threshold": 0.5,
                            "alpha": 0.05, "segments": [], "weighted": False,
                            "metrics": ["ndcg@10"]}


@pytest.mark.parametrize(("body", "field"), [
    ({}, "baseline"),  # no team baseline
    ({"baseline": 999_999}, "baseline"),
    ({"undecided": "maybe"}, "undecided"),
    ({"min_coverage": 2}, "min_coverage"),
    ({"metrics": ["p@10"]}, "metrics"),
    ({"metrics": ["nosuch"]}, "metrics"),
])
def test_the_gate_names_the_bad_field_and_saves_nothing(personas, baseline, body, field):
    run = evaluation_with_values(personas.team, worse(), docs="cba")
    if field == "metrics":
        body = {**body, "baseline": baseline.pk}
    response = api_as(personas.lead).post(gate_url(run), body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not RegressionVerdict.objects.exists()


def test_the_gate_refuses_a_baseline_on_another_scale(personas, baseline):
    run = evaluation_with_values(personas.team, worse(), docs="cba", scale="binary")
    response = api_as(personas.lead).post(gate_url(run), {"baseline": baseline.pk},
                                          format="json")
    assert response.status_code == 400
    assert "graded scale, the run on binary" in str(response.json()["baseline"])
    assert not RegressionVerdict.objects.exists()


def test_the_gate_is_for_leads_and_hidden_from_outsiders(personas, baseline):
    run = evaluation_with_values(personas.team, worse(), docs="cba")
    assert api_as(personas.grader).post(gate_url(run), {"baseline": baseline.pk},
                                        format="json").status_code == 403
    assert api_as(personas.outsider).post(gate_url(run), {"baseline": baseline.pk},
                                          format="json").status_code == 404
    assert APIClient().post(gate_url(run), {}, format="json").status_code == 401
    assert api_as(personas.lead).get(gate_url(run)).status_code == 405
    assert not RegressionVerdict.objects.exists()


def test_the_verdicts_are_listed_newest_first(personas, baseline):
    run = evaluation_with_values(personas.team, worse(), docs="cba")
    first = regression_verdict_create(evaluation=run, baseline=baseline, rule=VerdictRule(),
                                      source=RegressionVerdict.Source.FINISHED)
    second = regression_verdict_create(evaluation=run, baseline=baseline,
                                       rule=VerdictRule(threshold=1.0),
                                       source=RegressionVerdict.Source.GATE)
    url = f"/api/v1/evaluations/{run.pk}/verdicts/"
    body = api_as(personas.grader).get(url).json()
    assert body["count"] == 2
    assert [(r["verdict_id"], r["verdict"], r["source"]) for r in body["results"]] == [
        (second.pk, "no_change", "gate"), (first.pk, "regressed", "finished")]
    assert body["results"][0]["baseline"] == baseline.pk
    assert api_as(personas.outsider).get(url).status_code == 404


# --- manage.py evaluate --evaluation -------------------------------------------------------


def evaluate(*args) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("evaluate", *args, stdout=out, stderr=io.StringIO())
    except CommandError as error:
        return error.returncode, out.getvalue() + str(error)
    return 0, out.getvalue()


def test_the_command_exits_3_only_for_regressed(personas, baseline):
    TeamBaseline.objects.create(team=personas.team, evaluation=baseline)
    regressed = evaluation_with_values(personas.team, worse(), docs="cba")
    code, out = evaluate("--evaluation", str(regressed.pk))
    assert code == 3
    assert "nDCG@10 fell 0.160" in out and "GATE FAILED: regressed" in out
    same = evaluation_with_values(personas.team, BASE, docs="cba")
    code, out = evaluate("--evaluation", str(same.pk), "--baseline", str(baseline.pk))
    assert code == 0
    assert "No change" in out and "Gate passed" in out
    # The threshold: a drop of 0.16 is within 0.2.
    assert evaluate("--evaluation", str(regressed.pk), "--threshold", "0.2")[0] == 0
    assert RegressionVerdict.objects.filter(source="command").count() == 3


def test_the_command_fails_undecided_only_when_told(personas, baseline):
    # Six of ten keywords with a value: 60 %.
    part = evaluation_with_values(personas.team, worse()[:6] + [None] * 4, docs="cba")
    args = ("--evaluation", str(part.pk), "--baseline", str(baseline.pk))
    assert evaluate(*args)[0] == 0
    assert evaluate(*args, "--undecided", "fail")[0] == 3
    assert evaluate(*args, "--min-coverage", "0.6")[0] == 3  # regressed on those six


def test_the_command_names_a_bad_baseline(personas, baseline):
    run = evaluation_with_values(personas.team, worse(), docs="cba", scale="binary")
    code, out = evaluate("--evaluation", str(run.pk), "--baseline", str(baseline.pk))
    assert code == 1
    assert out.startswith("baseline: The baseline")
    code, out = evaluate("--evaluation", str(run.pk))
    assert (code, out) == (1, "baseline: No baseline: name one, or set the team's baseline.")
    assert evaluate("--evaluation", "999999")[0] == 1
    assert evaluate("--min-coverage", "2", "--evaluation", str(run.pk))[0] == 1
    assert not RegressionVerdict.objects.exists()


# --- the dashboard -------------------------------------------------------------------------


def test_the_dashboard_shows_the_standing_verdict(client, personas, baseline):
    from django.urls import reverse

    run = evaluation_with_values(personas.team, worse(), docs="cba")
    url = reverse("metrics:evaluation_dashboard", args=[run.pk])
    client.force_login(personas.grader)
    assert 'data-testid="regression-verdict"' not in client.get(url).content.decode()
    regression_verdict_create(evaluation=run, baseline=baseline, rule=VerdictRule(threshold=1),
                              source=RegressionVerdict.Source.GATE)
    latest = regression_verdict_create(evaluation=run, baseline=baseline, rule=VerdictRule(),
                                       source=RegressionVerdict.Source.FINISHED)
    page = html.unescape(client.get(url).content.decode())
    assert '<span class="verdict-badge" data-testid="verdict-badge">Regressed</span>' in page
    assert f"?a={baseline.pk}&b={run.pk}\">{baseline.name}</a>" in page
    assert "nDCG@10 fell 0.160" in page and latest.reasons[0] in page
    assert "Evaluation finished" in page
    # The gate call before it is listed with its rule, not shown as the verdict.
    assert "by an ad-hoc gate call: coverage \u2265 90 %, \u2265 5 shared keywords, \u03b1 " \
           "0.05, changes beyond 1.000" in page


def test_an_ad_hoc_gate_never_replaces_the_standing_verdict(client, personas, baseline):
    """8 of 10 keywords with a value (80 %): undecided by the team's rule (90 %); a gate
    call with min_coverage 0.7 says regressed. The dashboard keeps the team's verdict and
    lists the gate's with the rule that produced it; the model's history does not mark it."""
    from django.urls import reverse

    from metrics.reports.verdicts import model_regressed_evaluation_ids

    run = evaluation_with_values(personas.team, worse()[:8] + [None] * 2, docs="cba")
    standing = regression_verdict_create(evaluation=run, baseline=baseline,
                                         rule=VerdictRule(),
                                         source=RegressionVerdict.Source.FINISHED)
    assert standing.verdict == "undecided"
    body = api_as(personas.lead).post(gate_url(run), {"baseline": baseline.pk,
                                                      "min_coverage": 0.7},
                                      format="json").json()
    assert (body["verdict"], body["source"], body["rule"]["min_coverage"]) == (
        "regressed", "gate", 0.7)
    client.force_login(personas.grader)
    page = html.unescape(client.get(reverse("metrics:evaluation_dashboard",
                                            args=[run.pk])).content.decode())
    assert '<span class="verdict-badge" data-testid="verdict-badge">Undecided</span>' in page
    assert ("By the team's rule: coverage \u2265 90 %, \u2265 5 shared keywords, \u03b1 0.05, "
            "any change. Evaluation finished") in page
    ad_hoc = page[page.index('data-testid="ad-hoc-verdicts"'):]
    ad_hoc = ad_hoc[:ad_hoc.index("</ul>")]
    assert (f'<span class="verdict-badge">Regressed</span> against {baseline.name} by an '
            "ad-hoc gate call: coverage \u2265 70 %, \u2265 5 shared keywords, \u03b1 0.05, "
            f"any change ({personas.lead})") in ad_hoc
    assert model_regressed_evaluation_ids(model_id=run.model_id) == set()


def test_the_command_gates_an_existing_evaluation_only(personas, baseline):
    code, out = evaluate("--evaluation", str(baseline.pk), "--model", "1", "--metric", "p@5")
    assert (code, out) == (1, "--model, --metric: not with --evaluation, which gates an "
                              "existing evaluation")
