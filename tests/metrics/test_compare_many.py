"""The N-way compare: numbers of a small case worked out by hand, a flat query count from 2
to 10 evaluations, the page, its CSV and the API, and the refusals."""

import csv
import io

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit.models import Action, AuditEvent
from evaluations.models import EvaluationMetric
from metrics.models import KeywordMetricValue, MetricMean, RegressionVerdict
from metrics.reports import compare_many, compare_many_stats
from metrics_engine.statistics import bootstrap_ci, holm_adjust, randomization_test
from tests.metrics.builders import build_evaluation

pytestmark = pytest.mark.django_db

P2 = ("precision", 2, {})


def stamp_means(evaluations, **fields) -> None:
    """Give every metric of the evaluations a stored mean with these fields, as a recompute
    leaves them."""
    for config in EvaluationMetric.objects.filter(evaluation__in=evaluations):
        MetricMean.objects.update_or_create(metric=config, defaults=fields)


def _store(evaluation, values: dict[str, float | None]) -> None:
    config = EvaluationMetric.objects.get(evaluation=evaluation, code="precision")
    for keyword in evaluation.keywords.all():
        if keyword.normalized_text in values:
            KeywordMetricValue.objects.create(keyword=keyword, metric=config,
                                              value=values[keyword.normalized_text])


@pytest.fixture
def trio(personas):
    """A (reference): k1 [d1 d2], k2 [d1 d2], k3 [d1 d2], only-a.  B: k1 [d2 d1], k2 [d1 d2],
    k3 [d8 d9].  C: k1 [d1 d3], k2 [d1 d2], k3 [d1 d2].
    Stored P@2: A .5, 1, 0 (only-a 1); B 1, 1, .5; C .5, null, 0. A also has nDCG@10."""
    a = build_evaluation(team=personas.team, scale="binary", metrics=[P2, ("ndcg", 10, {})],
                         keywords={"k1": ["d1", "d2"], "k2": ["d1", "d2"],
                                   "k3": ["d1", "d2"], "only-a": ["x"]})
    b = build_evaluation(team=personas.team, scale="binary", metrics=[P2],
                         keywords={"k1": ["d2", "d1"], "k2": ["d1", "d2"], "k3": ["d8", "d9"]})
    c = build_evaluation(team=personas.team, scale="binary", metrics=[P2],
                         keywords={"k1": ["d1", "d3"], "k2": ["d1", "d2"], "k3": ["d1", "d2"]})
    _store(a, {"k1": 0.5, "k2": 1.0, "k3": 0.0, "only-a": 1.0})
    _store(b, {"k1": 1.0, "k2": 1.0, "k3": 0.5})
    _store(c, {"k1": 0.5, "k2": None, "k3": 0.0})
    return a, b, c


def test_numbers_match_the_hand_computed_case(trio):
    a, b, c = trio
    comparison = compare_many.evaluations_compare_many(evaluations=[a, b, c], reference=a)
    assert comparison.shared_count == 3
    assert comparison.not_shared_count == 1  # only-a
    assert len(comparison.unshared_metrics) == 1 and "nDCG" in comparison.unshared_metrics[0]
    assert comparison.rbo_k == 2
    (metric,) = comparison.metrics
    stat_a, stat_b, stat_c = metric.stats
    assert stat_a.summary.mean == pytest.approx(0.5)
    assert stat_b.summary.mean == pytest.approx(2.5 / 3)
    assert stat_c.summary.mean == pytest.approx(0.25)
    assert (stat_c.summary.present_count, stat_c.summary.keyword_count) == (2, 3)
    assert stat_c.summary.coverage == pytest.approx(2 / 3)
    resamples = compare_many_stats.RESAMPLES
    assert stat_a.summary.ci == bootstrap_ci([0.5, 1.0, 0.0], resamples=resamples, seed=0)
    assert stat_b.summary.ci == bootstrap_ci([1.0, 1.0, 0.5], resamples=resamples, seed=0)
    assert stat_a.test is None
    assert stat_b.test.mean_delta == pytest.approx(1 / 3)  # (.5 + 0 + .5) / 3
    assert stat_c.test.mean_delta == pytest.approx(0.0)
    assert stat_c.test.keyword_count == 2  # k2 has no value in C
    p_b = randomization_test(np.array([0.5, 0.0, 0.5]), resamples=resamples, seed=0)
    assert stat_b.test.p == p_b
    assert stat_c.test.p == 1.0  # two zero deltas: every sign flip is as extreme
    assert [stat_b.test.p_adjusted, stat_c.test.p_adjusted] == holm_adjust([p_b, 1.0])
    # Holm by hand: the smaller p times 2, the larger times 1 (not below the first).
    assert stat_b.test.p_adjusted == pytest.approx(min(1.0, 2 * p_b))
    assert stat_c.test.p_adjusted == 1.0


def test_keywords_with_deltas_churn_and_changed_filter(trio):
    a, b, c = trio
    comparison = compare_many.evaluations_compare_many(evaluations=[a, b, c], reference=a)
    # Largest |Δ| first (k1 and k3 by .5, then by text), k2 unchanged (Δ 0) last.
    assert [row.text for row in comparison.keywords] == ["k1", "k3", "k2"]
    assert comparison.changed_count == 2
    k1 = comparison.keywords[0]
    assert k1.values == [[0.5, 1.0, 0.5]]
    assert k1.deltas == [[None, 0.5, 0.0]]
    compare_many.keyword_overlaps(comparison=comparison, rows=comparison.keywords)
    k1_ref, k1_b, k1_c = k1.overlaps
    assert k1_ref is None
    assert (k1_b.jaccard, k1_b.entered, k1_b.left) == (1.0, [], [])
    assert k1_c.jaccard == pytest.approx(1 / 3)  # {d1 d2} vs {d1 d3}
    assert (k1_c.entered, k1_c.left) == (["d3"], ["d2"])
    k3_b = comparison.keywords[1].overlaps[1]
    assert (k3_b.rbo, k3_b.jaccard, k3_b.entered, k3_b.left) == (0.0, 0.0, ["d8", "d9"],
                                                                  ["d1", "d2"])
    changed = compare_many.evaluations_compare_many(evaluations=[a, b, c], reference=a,
                                                    show="changed", sort="text",
                                                    descending=False)
    assert [row.text for row in changed.keywords] == ["k1", "k3"]


def test_tukey_mode_tests_every_pair(trio):
    a, b, c = trio
    comparison = compare_many.evaluations_compare_many(evaluations=[a, b, c], reference=b,
                                                       mode="tukey")
    (metric,) = comparison.metrics
    # k2 has no value in C: two complete keywords, three pairs.
    assert metric.complete_count == 2
    assert [(first.pk, second.pk) for first, second, _, _ in metric.named_pairs] == [
        (a.pk, b.pk), (a.pk, c.pk), (b.pk, c.pk)]
    # Over k1, k3: A .25, B .75, C .25.
    assert [pair.mean_delta for _, _, pair, _ in metric.named_pairs] == pytest.approx(
        [0.5, 0.0, -0.5])
    assert metric.named_pairs[1][2].p == 1.0


@pytest.mark.parametrize(("pick", "field"), [
    ("one", "evaluations"), ("eleven", "evaluations"), ("mixed", "evaluations"),
    ("foreign_team", "evaluations"), ("no_reference", "reference"),
])
def test_it_refuses_bad_sets_naming_the_field(personas, trio, pick, field):
    a, b, c = trio
    extra = [build_evaluation(team=personas.team, scale="binary", metrics=[P2],
                              keywords={"k1": ["d1"]})
             for _ in range(8 if pick == "eleven" else 0)]
    graded = build_evaluation(team=personas.team, scale="graded", metrics=[P2],
                              keywords={"k1": ["d1"]})
    foreign = build_evaluation(team=personas.other_team, scale="binary", metrics=[P2],
                               keywords={"k1": ["d1"]})
    evaluations, reference = {
        "one": ([a], a), "eleven": ([a, b, c, *extra], a), "mixed": ([a, graded], a),
        "foreign_team": ([a, foreign], a), "no_reference": ([a, b], c),
    }[pick]
    with pytest.raises(ValidationError) as error:
        compare_many.evaluations_compare_many(evaluations=evaluations, reference=reference)
    assert field in error.value.message_dict


def _evaluations(personas, count: int):
    evaluations = []
    for n in range(count):
        evaluation = build_evaluation(
            team=personas.team, scale="binary", metrics=[P2, ("rr", 2, {})],
            keywords={f"k{i}": [f"d{(i + n) % 3}", f"d{i}"] for i in range(4)})
        for config in EvaluationMetric.objects.filter(evaluation=evaluation):
            KeywordMetricValue.objects.bulk_create(
                KeywordMetricValue(keyword=keyword, metric=config, value=(n + i) % 3 / 2)
                for i, keyword in enumerate(evaluation.keywords.order_by("position")))
        evaluations.append(evaluation)
    return evaluations


def test_query_count_is_the_same_for_2_and_10_evaluations(personas, client):
    evaluations = _evaluations(personas, 10)
    client.force_login(personas.lead)
    counts = {}
    for count in (2, 10):
        chosen = evaluations[:count]
        with CaptureQueriesContext(connection) as selector:
            comparison = compare_many.evaluations_compare_many(evaluations=chosen,
                                                               reference=chosen[0])
            compare_many.keyword_overlaps(comparison=comparison, rows=comparison.keywords)
        query = "&".join(f"evaluation={e.pk}" for e in chosen)
        with CaptureQueriesContext(connection) as page:
            response = client.get(f"{reverse('metrics:compare_many')}?{query}")
        assert response.status_code == 200
        with CaptureQueriesContext(connection) as api:
            assert client.get(f"/api/v1/compare/?{query}").status_code == 200
        counts[count] = (len(selector), len(page), len(api))
    assert counts[2] == counts[10]
    # configs, keywords, values, keyword bounds, the verdicts' snapshots, the rows' snapshots.
    assert counts[2][0] == 6


def test_the_page_shows_the_comparison(client, personas, trio):
    a, b, c = trio
    client.force_login(personas.grader)
    url = reverse("metrics:compare_many")
    assert client.get(url).status_code == 200  # the picker alone
    response = client.get(url, {"evaluation": [a.pk, b.pk, c.pk], "reference": a.pk})
    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-testid="many-metric-0"' in body
    assert "0.8333" in body and "0.2500" in body
    assert "2 of 3" in body  # C's coverage
    assert 'data-keyword="k1"' in body and "+d3" in body and "\u2212d2" in body  # minus sign
    assert "2 of 3 keywords changed" in body
    changed = client.get(url, {"evaluation": [a.pk, b.pk, c.pk], "show": "changed"})
    assert 'data-keyword="k2"' not in changed.content.decode()
    tukey = client.get(url, {"evaluation": [a.pk, b.pk, c.pk], "mode": "tukey"})
    assert 'data-testid="many-pairs-0"' in tukey.content.decode()
    # The two-way compare links here.
    assert url in client.get(reverse("metrics:compare")).content.decode()


@pytest.mark.parametrize("query", [
    {"evaluation": ["1"]}, {"evaluation": ["x", "y"]}, {"evaluation": [], "mode": "z"}])
def test_the_page_answers_bad_input_with_400(client, personas, trio, query):
    a, _, _ = trio
    client.force_login(personas.lead)
    query = {**query, "evaluation": [str(a.pk)] if query["evaluation"] == ["1"]
             else query["evaluation"] or [str(a.pk)]}
    response = client.get(reverse("metrics:compare_many"), query)
    assert response.status_code == 400
    assert 'data-testid="errors"' in response.content.decode()


def test_mixed_scales_are_refused_on_the_page(client, personas, trio):
    a, _, _ = trio
    graded = build_evaluation(team=personas.team, scale="graded", metrics=[P2],
                              keywords={"k1": ["d1"]})
    client.force_login(personas.lead)
    response = client.get(reverse("metrics:compare_many"), {"evaluation": [a.pk, graded.pk]})
    assert response.status_code == 400
    body = response.content.decode()
    assert "same scale" in body
    # The refused picks stay ticked.
    assert f'id="pick-{graded.pk}" aria-label="Compare {graded.name}" checked' in body


def test_an_outsider_gets_404_and_a_foreign_evaluation_too(client, personas, trio):
    a, b, _ = trio
    foreign = build_evaluation(team=personas.other_team, scale="binary", metrics=[P2],
                               keywords={"k1": ["d1"]})
    client.force_login(personas.outsider)
    assert client.get(reverse("metrics:compare_many"),
                      {"evaluation": [a.pk, b.pk]}).status_code == 404
    client.force_login(personas.lead)
    for url in (reverse("metrics:compare_many"), reverse("metrics:compare_many_csv"),
                "/api/v1/compare/"):
        assert client.get(url, {"evaluation": [a.pk, foreign.pk]}).status_code == 404, url


def test_the_csv_holds_the_keyword_table_formula_safe(client, personas, trio):
    a, b, c = trio
    keyword = b.keywords.get(normalized_text="k3")
    keyword.snapshots.filter(position=1).update(doc_id="=cmd")
    client.force_login(personas.grader)
    response = client.get(reverse("metrics:compare_many_csv"),
                          {"evaluation": [a.pk, b.pk, c.pk]})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    # The download is in the team's audit trail, once.
    exported = AuditEvent.objects.get(action=Action.EXPORT_DOWNLOADED)
    assert (exported.actor_id, exported.team_id, exported.object_id) == (
        personas.grader.pk, personas.team.pk, str(a.pk))
    assert exported.changes == {"format": [None, "compare_csv"],
                                "evaluations": [None, [a.pk, b.pk, c.pk]]}
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    names = [a.name, b.name, c.name]
    assert rows[0][:6] == ["keyword", f"P@2 [{names[0]}]", f"P@2 [{names[1]}]",
                           f"P@2 Δ [{names[1]}]", f"P@2 [{names[2]}]", f"P@2 Δ [{names[2]}]"]
    assert rows[0][6:] == [f"RBO@2 [{names[1]}]", f"Jaccard@2 [{names[1]}]",
                           f"entered [{names[1]}]", f"left [{names[1]}]",
                           f"RBO@2 [{names[2]}]", f"Jaccard@2 [{names[2]}]",
                           f"entered [{names[2]}]", f"left [{names[2]}]"]
    by_text = {row[0]: row for row in rows[1:]}
    assert [row[0] for row in rows[1:]] == ["k1", "k3", "k2"]
    assert by_text["k1"][1:6] == ["0.5", "1", "0.5", "0.5", "0"]
    # Per other evaluation: RBO, Jaccard, entered, left.
    assert by_text["k1"][7:10] == ["1", "", ""]
    assert by_text["k1"][11:] == ["0.333333", "d3", "d2"]
    assert by_text["k2"][4] == ""  # C has no value for k2
    # A document id that starts like a formula is written as text.
    assert by_text["k3"][8] == "'=cmd d9"


def test_the_api_returns_the_same_numbers(client, personas, trio):
    a, b, c = trio
    client.force_login(personas.grader)
    response = client.get("/api/v1/compare/", {"evaluation": [a.pk, b.pk, c.pk],
                                               "reference": a.pk, "page_size": 2})
    assert response.status_code == 200
    body = response.json()
    assert [e["id"] for e in body["evaluations"]] == [a.pk, b.pk, c.pk]
    assert body["reference"] == a.pk
    (metric,) = body["metrics"]
    assert (metric["code"], metric["k"]) == ("precision", 2)
    stats = metric["evaluations"]
    assert [s["mean"] for s in stats] == pytest.approx([0.5, 2.5 / 3, 0.25])
    assert stats[0]["delta"] is None and stats[1]["delta"] == pytest.approx(1 / 3)
    assert stats[2]["coverage"] == pytest.approx(2 / 3)
    assert (body["keyword_count"], body["page_count"]) == (3, 2)
    assert [row["text"] for row in body["keywords"]] == ["k1", "k3"]
    assert body["keywords"][0]["overlaps"][1] == {
        "evaluation": c.pk, "rbo": pytest.approx(body["keywords"][0]["overlaps"][1]["rbo"]),
        "jaccard": pytest.approx(1 / 3), "entered": ["d3"], "left": ["d2"]}


def test_the_api_names_the_field_it_refuses(client, personas, trio):
    a, _, _ = trio
    graded = build_evaluation(team=personas.team, scale="graded", metrics=[P2],
                              keywords={"k1": ["d1"]})
    client.force_login(personas.grader)
    one = client.get("/api/v1/compare/", {"evaluation": [a.pk]})
    assert one.status_code == 400 and "evaluations" in one.json()
    mixed = client.get("/api/v1/compare/", {"evaluation": [a.pk, graded.pk]})
    assert mixed.status_code == 400 and "evaluations" in mixed.json()
    assert client.get("/api/v1/compare/").status_code == 400
    assert client.post("/api/v1/compare/", {}).status_code in (403, 405)


def test_the_model_history_draws_each_run_with_its_interval(client, personas, trio):
    from django.utils import timezone

    from evaluations.models import Evaluation

    a, b, _ = trio
    Evaluation.objects.filter(pk__in=[a.pk, b.pk]).update(
        status=Evaluation.Status.FINISHED, model=a.model, finished_at=timezone.now())
    stamp_means([a, b], updated_at=timezone.now())
    MetricMean.objects.filter(metric__evaluation=a, metric__code="precision").update(value=0.625)
    MetricMean.objects.filter(metric__evaluation=b, metric__code="precision").update(
        value=2.5 / 3)
    client.force_login(personas.grader)
    response = client.get(reverse("metrics:model_history", args=[a.model_id]))
    assert response.status_code == 200
    body = response.content.decode()
    low, high = bootstrap_ci([0.5, 1.0, 0.0, 1.0], resamples=compare_many_stats.RESAMPLES)
    assert f"{low:.4f} to {high:.4f}" in body  # A over its four keywords, only-a included
    low, high = bootstrap_ci([1.0, 1.0, 0.5], resamples=compare_many_stats.RESAMPLES)
    assert f"{low:.4f} to {high:.4f}" in body
    # P@2's chart: both runs with whiskers; nDCG@10 (A only, no values) none.
    assert body.count('class="interval"') == 2
    assert 'class="marker"' not in body and 'data-testid="regressed"' not in body
    # B's latest verdict against A by the team's rule says regressed: its point is ringed;
    # an older verdict that a newer one overrides does not count, nor a gate call's.
    finished = RegressionVerdict.Source.FINISHED
    RegressionVerdict.objects.create(evaluation=a, baseline=b, verdict="regressed",
                                     source=finished)
    RegressionVerdict.objects.create(evaluation=a, baseline=b, verdict="no_change",
                                     source=finished)
    RegressionVerdict.objects.create(evaluation=a, baseline=b, verdict="regressed",
                                     source=RegressionVerdict.Source.GATE)
    RegressionVerdict.objects.create(evaluation=b, baseline=a, verdict="regressed",
                                     source=finished)
    body = client.get(reverse("metrics:model_history", args=[a.model_id])).content.decode()
    assert body.count('class="marker"') == 1


def test_config_intervals_read_once_and_cache_per_update(personas, trio, django_assert_num_queries):
    from django.core.cache import cache
    from django.utils import timezone

    a, b, _ = trio
    cache.clear()
    stamp_means([a, b], updated_at=timezone.now())
    configs = list(EvaluationMetric.objects.filter(evaluation__in=[a, b], code="precision")
                   .with_stored_mean())
    with django_assert_num_queries(1):
        first = compare_many_stats.config_intervals(configs=configs)
    with django_assert_num_queries(0):
        assert compare_many_stats.config_intervals(configs=configs) == first
    by_evaluation = {c.evaluation_id: first[c.pk] for c in configs}
    assert by_evaluation[b.pk] == bootstrap_ci([1.0, 1.0, 0.5],
                                               resamples=compare_many_stats.RESAMPLES)


def test_the_page_escapes_document_ids(client, personas, trio):
    a, b, _ = trio
    b.keywords.get(normalized_text="k3").snapshots.filter(position=1).update(
        doc_id="<script>x</script>")
    client.force_login(personas.grader)
    body = client.get(reverse("metrics:compare_many"),
                      {"evaluation": [a.pk, b.pk]}).content.decode()
    assert "<script>x</script>" not in body
    assert "+&lt;script&gt;x&lt;/script&gt;" in body
