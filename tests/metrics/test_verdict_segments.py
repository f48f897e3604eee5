"""Verdicts per segment and weighted by traffic over stored keyword values: the service,
the gate API's `segments` and `weighted`, `manage.py evaluate --segment --weighted`, and the
dashboard's table per metric and segment."""

import html
import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from evaluations.models import Evaluation, EvaluationMetric, Keyword
from metrics.models import KeywordMetricValue, RegressionVerdict
from metrics.reports.verdicts import regression_verdict_create
from metrics_engine.verdicts import VerdictRule
from searchtweak.services import api_token_create
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db

# 40 head keywords asked 100 times each and 12 tail keywords asked once. Every value is a
# binary fraction, so each delta is exact: the head moves ±0.5 in turn (mean 0, not one
# keyword unchanged), the tail falls 0.25 on every keyword.
HEAD = [f"head {n}" for n in range(40)]
TAIL = [f"tail {n}" for n in range(12)]
BASELINE_VALUES = {**dict.fromkeys(HEAD, 0.5), **dict.fromkeys(TAIL, 0.75)}
RUN_VALUES = {**{text: 1.0 if n % 2 else 0.0 for n, text in enumerate(HEAD)},
              **dict.fromkeys(TAIL, 0.5)}
NDCG = ("ndcg", 10, {})


def evaluation_with(team, values: dict[str, float], *, docs: str,
                    traffic: bool = False) -> Evaluation:
    """A finished evaluation of these keywords' stored nDCG@10 values; with `traffic`, the
    head keywords weigh 100 and carry "head", the tail ones weigh 1 and carry "tail"."""
    evaluation = build_evaluation(team=team, keywords={text: list(docs) for text in values},
                                  metrics=[NDCG], status=Evaluation.Status.FINISHED)
    config = EvaluationMetric.objects.get(evaluation=evaluation)
    keywords = {k.text: k for k in Keyword.objects.filter(evaluation=evaluation)}
    KeywordMetricValue.objects.bulk_create(
        KeywordMetricValue(keyword=keywords[text], metric=config, value=value)
        for text, value in values.items())
    if traffic:
        Keyword.objects.filter(evaluation=evaluation, text__in=HEAD).update(
            weight=100, tags=["head", "lang:en"])
        Keyword.objects.filter(evaluation=evaluation, text__in=TAIL).update(
            weight=1, tags=["lang:en", "tail"])
    return evaluation


@pytest.fixture
def baseline(personas):
    # The baseline carries no traffic: segments and weights are the run's.
    return evaluation_with(personas.team, BASELINE_VALUES, docs="abc")


@pytest.fixture
def run(personas):
    return evaluation_with(personas.team, RUN_VALUES, docs="cba", traffic=True)


def p_words(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def test_the_tail_fell_while_the_head_held_in_words_and_numbers(personas, baseline, run):
    verdict = regression_verdict_create(
        evaluation=run, baseline=baseline, rule=VerdictRule(segments=("head", "tail")),
        source=RegressionVerdict.Source.GATE)
    [metric] = verdict.metrics
    overall, head, tail = metric["segments"]
    assert [(row["segment"], row["weighted"], row["shared_count"], row["run_keyword_count"])
            for row in (overall, head, tail)] == [(None, False, 52, 52), ("head", False, 40, 40),
                                                  ("tail", False, 12, 12)]
    # Deltas by hand: head (20 · 0.5 - 20 · 0.5) / 40 = 0; tail -0.25 on each of 12; overall
    # (0 - 12 · 0.25) / 52 = -3 / 52. Every tail resample is -0.25 too.
    assert (overall["mean_delta"], head["mean_delta"], tail["mean_delta"]) == (-3 / 52, 0.0,
                                                                               -0.25)
    assert (tail["ci_low"], tail["ci_high"]) == (-0.25, -0.25)
    # The head's mean is exactly 0: every sign flip reaches it, p = 1. The tail's twelve
    # drops of one sign: 2 of 4,096 flips, estimated; the overall p is larger still.
    assert head["p"] == 1.0
    assert tail["p"] == pytest.approx(2 / 4096, abs=0.0015)
    assert tail["p"] < overall["p"] < head["p"]
    # Holm over the three, by hand from those raw p's: 3 · p(tail), then max(that,
    # 2 · p(overall)), then max(that, 1 · p(head)) = 1.
    assert tail["p_adjusted"] == pytest.approx(3 * tail["p"])
    assert overall["p_adjusted"] == pytest.approx(max(3 * tail["p"], 2 * overall["p"]))
    assert head["p_adjusted"] == 1.0
    assert overall["p_adjusted"] > 0.05
    assert [row["verdict"] for row in (overall, head, tail)] == [
        "no_change", "no_change", "regressed"]
    # The metric's own fields: the comparison over every keyword, its verdict and reason
    # those of the metric as a whole.
    assert (metric["mean_delta"], metric["p_adjusted"]) == (overall["mean_delta"],
                                                             overall["p_adjusted"])
    assert (verdict.verdict, metric["verdict"]) == ("regressed", "regressed")
    assert verdict.reasons == [
        "Regressed: 1 of 1 metric got worse on tail; it held overall and on head.",
        "nDCG@10 held overall (\u22120.058) and on head (+0.000) but fell 0.250 on tail (95 % "
        f"CI \u22120.250\u2026\u22120.250, {p_words(tail['p_adjusted'])} after Holm) over 12 "
        "keywords.",
    ]
    assert tail["reason"].startswith("nDCG@10 on tail fell 0.250 (95 % CI ")
    assert verdict.rule["segments"] == ["head", "tail"]


def test_weighted_by_traffic_the_head_outweighs_the_tail(personas, baseline, run):
    verdict = regression_verdict_create(
        evaluation=run, baseline=baseline,
        rule=VerdictRule(segments=("tail",), weighted=True),
        source=RegressionVerdict.Source.GATE)
    rows = {(row["segment"], row["weighted"]): row for row in verdict.metrics[0]["segments"]}
    assert list(rows) == [(None, False), (None, True), ("tail", False), ("tail", True)]
    # Σ w·d / Σ w: the head's 100 · ±0.5 cancel, the tail adds 12 · 1 · -0.25 = -3, over
    # 40 · 100 + 12 · 1 = 4,012; on the tail alone every weight is 1: -0.25.
    assert rows[None, True]["mean_delta"] == -3 / 4012
    assert rows["tail", True]["mean_delta"] == -0.25
    assert rows[None, False]["mean_delta"] == -3 / 52
    assert verdict.reasons[1].startswith(
        "nDCG@10 held overall (\u22120.058; weighted by traffic \u22120.001) but fell 0.250 "
        "on tail (95 % CI ")


def test_a_segment_no_keyword_carries_is_not_compared_and_said(personas, baseline, run):
    verdict = regression_verdict_create(
        evaluation=run, baseline=baseline, rule=VerdictRule(segments=("lang:de",)),
        source=RegressionVerdict.Source.GATE)
    assert verdict.metrics[0]["segments"] == []
    assert verdict.reasons[-1] == "Not compared: no keyword tagged lang:de."


def test_too_few_shared_keywords_leave_a_segment_undecided_and_say_why(personas, baseline,
                                                                        run):
    # Four tail keywords of the run lost their values: 8 shared remain, under a rule of 9.
    Keyword.objects.filter(evaluation=run, text__in=TAIL[:4]).update(
        fetch_status=Keyword.FetchStatus.FETCHED)
    KeywordMetricValue.objects.filter(keyword__evaluation=run,
                                      keyword__text__in=TAIL[:4]).delete()
    verdict = regression_verdict_create(
        evaluation=run, baseline=baseline,
        rule=VerdictRule(segments=("tail",), min_coverage=0.5, min_shared_keywords=9),
        source=RegressionVerdict.Source.GATE)
    overall, tail = verdict.metrics[0]["segments"]
    assert (overall["shared_count"], tail["shared_count"]) == (48, 8)
    assert (tail["verdict"], tail["p_adjusted"]) == ("undecided", None)
    assert tail["reason"] == ("Undecided: nDCG@10 on tail: only 8 keywords with a value in "
                              "both the run and the baseline, fewer than 9.")
    assert verdict.verdict == "undecided"
    assert verdict.reasons[1].endswith(
        "; undecided on tail (only 8 keywords with a value in both the run and the "
        "baseline, fewer than 9).")


# --- the gate API --------------------------------------------------------------------------


def api_as(user) -> APIClient:
    _, key = api_token_create(user=user, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def gate_url(evaluation) -> str:
    return f"/api/v1/evaluations/{evaluation.pk}/gate/"


def test_the_gate_judges_the_segments_and_weighting_it_is_given(personas, baseline, run):
    response = api_as(personas.lead).post(gate_url(run), {
        "baseline": baseline.pk, "segments": [" Tail ", "lang:de"], "weighted": True,
    }, format="json")
    assert response.status_code == 200
    body = response.json()
    stored = RegressionVerdict.objects.get()
    assert (body["verdict"], body["passed"], body["verdict_id"]) == ("regressed", False,
                                                                     stored.pk)
    # Cleaned as tags are: " Tail " is the tag tail.
    assert (body["rule"]["segments"], body["rule"]["weighted"]) == (["tail", "lang:de"], True)
    segments = body["metrics"][0]["segments"]
    assert [(row["segment"], row["weighted"], row["verdict"]) for row in segments] == [
        (None, False, "no_change"), (None, True, "no_change"),
        ("tail", False, "regressed"), ("tail", True, "regressed")]
    assert segments == stored.metrics[0]["segments"]
    assert segments[3]["mean_delta"] == -0.25
    assert body["reasons"][-1] == "Not compared: no keyword tagged lang:de."
    assert "segments tail, lang:de; weighted by traffic too" in body["rule_text"]
    listed = api_as(personas.grader).get(f"/api/v1/evaluations/{run.pk}/verdicts/").json()
    assert listed["results"][0]["metrics"][0]["segments"] == segments


@pytest.mark.parametrize(("body", "field"), [
    ({"segments": "tail"}, "segments"),
    ({"segments": [""]}, "segments"),
    ({"segments": ["   "]}, "segments"),
    ({"segments": ["x" * 51]}, "segments"),
    ({"segments": [f"t{n}" for n in range(21)]}, "segments"),
    ({"segments": ["a|b"]}, "segments"),
    ({"weighted": "maybe"}, "weighted"),
    ({"weighted": [True]}, "weighted"),
])
def test_the_gate_names_a_bad_segment_or_weighting_and_saves_nothing(personas, baseline, run,
                                                                      body, field):
    response = api_as(personas.lead).post(gate_url(run), {"baseline": baseline.pk, **body},
                                          format="json")
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert not RegressionVerdict.objects.exists()


def test_twenty_segments_of_fifty_characters_pass_the_gate(personas, baseline, run):
    segments = ["tail"] + [f"{n:02d}" + "x" * 48 for n in range(19)]
    response = api_as(personas.lead).post(gate_url(run), {"baseline": baseline.pk,
                                                          "segments": segments},
                                          format="json")
    assert response.status_code == 200
    assert len(response.json()["rule"]["segments"]) == 20


# --- manage.py evaluate --segment --weighted ------------------------------------------------


def evaluate(*args) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("evaluate", *args, stdout=out, stderr=io.StringIO())
    except CommandError as error:
        return error.returncode, out.getvalue() + str(error)
    return 0, out.getvalue()


def test_the_command_judges_segments_and_weighting(personas, baseline, run):
    code, out = evaluate("--evaluation", str(run.pk), "--baseline", str(baseline.pk),
                         "--segment", "tail", "--segment", "head", "--weighted")
    assert code == 3
    assert "Regressed: 1 of 1 metric got worse on tail; it held overall and on head." in out
    assert "but fell 0.250 on tail" in out and "GATE FAILED: regressed" in out
    stored = RegressionVerdict.objects.get()
    assert (stored.source, stored.rule["segments"], stored.rule["weighted"]) == (
        "command", ["tail", "head"], True)
    code, out = evaluate("--evaluation", str(run.pk), "--baseline", str(baseline.pk),
                         "--segment", "")
    assert (code, out) == (1, "segments: item 0: a tag, not an empty text.")
    assert RegressionVerdict.objects.count() == 1


# --- the dashboard -------------------------------------------------------------------------


def test_the_dashboard_shows_a_table_per_metric_and_segment(client, personas, baseline, run):
    regression_verdict_create(evaluation=run, baseline=baseline,
                              rule=VerdictRule(segments=("head", "tail")),
                              source=RegressionVerdict.Source.FINISHED)
    client.force_login(personas.grader)
    page = html.unescape(client.get(reverse("metrics:evaluation_dashboard",
                                            args=[run.pk])).content.decode())
    table = page[page.index('data-testid="verdict-segments"'):]
    table = table[:table.index("</table>")]
    rows = table.split('data-testid="verdict-segment"')[1:]
    assert [("every keyword" in row, "<strong>head</strong>" in row,
             "<strong>tail</strong>" in row) for row in rows] == [
        (True, False, False), (False, True, False), (False, False, True)]
    assert ">-0.250<" in rows[2] and "12 of 12" in rows[2] and "Regressed" in rows[2]
    assert "No change" in rows[1] and ">1.000<" in rows[1]
