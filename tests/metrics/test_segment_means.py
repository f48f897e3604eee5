"""Stored per-segment and weighted means (metrics.recompute.segments, read by
metrics.selectors.segment_means) against hand-computed values from docs/METRICS.md,
"Weighted means and segments", and against a recompute from scratch."""

from fractions import Fraction

import pytest
from django.core.management import call_command

from evaluations.models import Evaluation, Keyword
from evaluations.services.configuration import evaluation_update
from metrics.models import MetricMean, SegmentSums
from metrics.selectors import SegmentMean, segment_means
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.metrics.oracles import (
    assert_segment_sums_equal_stored_values,
    assert_stored_values_equal_a_full_recompute,
)
from tests.searchtweak.factories import UserFactory

pytestmark = pytest.mark.django_db

# P@10 once graded: 3, 2 and 1 relevant documents of 10; weights 5, 3 and 0.
KEYWORDS = {"shoes": (3, 5, ["head"]), "boots": (2, 3, ["head", "lang:de"]),
            "socks": (1, 0, ["tail"])}


def by_hand(pairs: list[tuple[float, int]]) -> float | None:
    """R(Σ w·v) / Σ w, the products and the sum exact, rounded once."""
    weight = sum(w for _, w in pairs if w > 0)
    return float(sum(Fraction(v) * w for v, w in pairs)) / weight if weight else None


@pytest.fixture
def grade(django_capture_on_commit_callbacks):
    graders = [UserFactory(username="g0")]

    def grade(changes):
        with django_capture_on_commit_callbacks(execute=True):
            set_grades(graders, changes)

    return grade


def tagged_evaluation(**extra) -> Evaluation:
    evaluation = build_evaluation(
        keywords={text: [f"{text}-{rank}" for rank in range(10)] for text in KEYWORDS},
        metrics=[("precision", 10, {}), ("ndcg", 10, {})], **extra)
    for text, (_, weight, tags) in KEYWORDS.items():
        Keyword.objects.filter(evaluation=evaluation, text=text).update(weight=weight, tags=tags)
    return evaluation


def grade_fully(grade, evaluation, texts):
    for text in texts:
        relevant = KEYWORDS[text][0]
        grade([(slot(evaluation, text, rank), 2 if rank <= relevant else 0)
               for rank in range(1, 11)])


def precision_means(evaluation) -> dict[tuple[str, bool], SegmentMean]:
    code_of = dict(evaluation.metric_configs.values_list("pk", "code"))
    return {(mean.segment, mean.weighted): mean for mean in segment_means(
        evaluation_id=evaluation.pk) if code_of[mean.metric_id] == "precision"}


def test_every_segment_mean_plain_and_weighted_by_hand(grade):
    evaluation = tagged_evaluation()
    grade_fully(grade, evaluation, KEYWORDS)
    means = precision_means(evaluation)
    assert sorted(means) == [("", False), ("", True), ("head", False), ("head", True),
                             ("lang:de", False), ("lang:de", True), ("tail", False),
                             ("tail", True)]
    assert means["", False] == SegmentMean(means["", False].metric_id, "", False,
                                           by_hand([(0.3, 1), (0.2, 1), (0.1, 1)]), 3, 3,
                                           by_hand([(0.3, 1), (0.2, 1), (0.1, 1)]),
                                           by_hand([(0.3, 1), (0.2, 1), (0.1, 1)]), True)
    # The plain mean over every keyword is the stored mean, bit for bit.
    stored = MetricMean.objects.get(metric_id=means["", False].metric_id)
    assert (stored.value, stored.keyword_count) == (means["", False].value, 3)
    # Weighted: "socks" weighs 0 and is left out.
    assert (means["", True].value, means["", True].keyword_count,
            means["", True].weight_sum) == (by_hand([(0.3, 5), (0.2, 3)]), 2, 8)
    assert means["", True].value == 0.2625
    assert means["head", True].value == by_hand([(0.3, 5), (0.2, 3)])
    assert (means["head", False].value, means["head", False].keyword_count) == (0.25, 2)
    assert means["lang:de", True].value == by_hand([(0.2, 3)]) == 0.20000000000000004
    assert (means["tail", False].value, means["tail", False].keyword_count) == (0.1, 1)
    assert (means["tail", True].value, means["tail", True].keyword_count,
            means["tail", True].weight_sum) == (None, 0, 0)
    assert_stored_values_equal_a_full_recompute(evaluation.pk)
    assert precision_means(evaluation) == means


def test_segment_bounds_count_keywords_not_graded_yet(grade):
    evaluation = tagged_evaluation()
    # As after its fetch: every keyword has a stored value, null while nothing is graded.
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    grade_fully(grade, evaluation, ["shoes"])
    # "boots": 2 relevant of its first 5, the other 5 not graded: P@10 is 0.4 over what is
    # graded, and between 0.2 and 0.7 once everything is.
    grade([(slot(evaluation, "boots", rank), 2 if rank <= 2 else 0) for rank in range(1, 6)])
    means = precision_means(evaluation)
    german = means["lang:de", True]
    assert (german.value, german.keyword_count) == (by_hand([(0.4, 3)]), 1)
    assert (german.lower, german.upper) == (by_hand([(0.2, 3)]), by_hand([(0.7, 3)]))
    head = means["head", True]
    assert (head.value, head.lower, head.upper) == (
        by_hand([(0.3, 5), (0.4, 3)]), by_hand([(0.3, 5), (0.2, 3)]),
        by_hand([(0.3, 5), (0.7, 3)]))
    assert head.bounds_exact
    # "socks" has no grade: no value, bounds 0..1 in the plain tail (its weight is 0).
    tail = means["tail", False]
    assert (tail.value, tail.keyword_count, tail.lower, tail.upper) == (None, 0, 0.0, 1.0)
    weighted_tail = means["tail", True]
    assert (weighted_tail.value, weighted_tail.lower, weighted_tail.upper) == (None, None, None)
    assert_segment_sums_equal_stored_values(evaluation.pk)


def test_regrades_move_the_segment_sums_to_those_of_a_recompute(grade):
    evaluation = tagged_evaluation()
    grade_fully(grade, evaluation, KEYWORDS)
    grade([(slot(evaluation, "shoes", 1), 0), (slot(evaluation, "socks", 2), 3)])
    grade([(slot(evaluation, "boots", rank), None) for rank in range(1, 11)])
    means = precision_means(evaluation)
    assert means["head", False].value == 0.2  # shoes 0.2, boots ungraded
    assert means["tail", False].value == 0.2
    assert_stored_values_equal_a_full_recompute(evaluation.pk)


def test_the_writes_move_the_stored_sums_instead_of_reading_every_value(grade):
    """Sums set wrong on purpose stay wrong by as much after a grade: only moved."""
    from metrics_engine.exact_sum import exact_units, total_decode, total_encode

    evaluation = tagged_evaluation()
    grade_fully(grade, evaluation, ["shoes"])
    row = SegmentSums.objects.get(metric__evaluation=evaluation, metric__code="precision",
                                  segment="head", weighted=True)
    assert (total_decode(row.value_total), row.value_weight) == (5 * exact_units(0.3), 5)
    SegmentSums.objects.filter(pk=row.pk).update(
        value_total=total_encode(total_decode(row.value_total) + exact_units(1.0)))
    grade_fully(grade, evaluation, ["boots"])
    row.refresh_from_db()
    assert total_decode(row.value_total) == (5 * exact_units(0.3) + 3 * exact_units(0.2)
                                             + exact_units(1.0))
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
    assert precision_means(evaluation)["head", True].value == by_hand([(0.3, 5), (0.2, 3)])


def test_new_weights_and_tags_of_a_started_evaluation_regroup_its_sums(grade):
    evaluation = tagged_evaluation()
    grade_fully(grade, evaluation, KEYWORDS)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.PENDING)
    evaluation.refresh_from_db()
    evaluation_update(evaluation=evaluation, keywords=[
        {"keyword": "shoes", "weight": 1, "tags": ["head"]},
        {"keyword": "boots", "weight": 3, "tags": ["tail"]},
        {"keyword": "socks", "weight": 2, "tags": ["tail"]}])
    means = precision_means(evaluation)
    assert means["tail", True].value == by_hand([(0.2, 3), (0.1, 2)])
    assert means["", True].value == by_hand([(0.3, 1), (0.2, 3), (0.1, 2)])
    assert (means.get(("lang:de", False)) is None
            or means["lang:de", False].keyword_count == 0)
    assert SegmentSums.objects.filter(metric__evaluation=evaluation, segment="",
                                      weighted=False).count() == 2
    assert_segment_sums_equal_stored_values(evaluation.pk)


def test_a_metric_without_known_sums_is_read_from_its_values(grade):
    evaluation = tagged_evaluation()
    grade_fully(grade, evaluation, KEYWORDS)
    before = segment_means(evaluation_id=evaluation.pk)
    SegmentSums.objects.filter(metric__evaluation=evaluation).delete()
    assert segment_means(evaluation_id=evaluation.pk) == before


def test_deleting_keywords_forgets_the_segment_sums_and_the_refresh_rebuilds_them(grade):
    from metrics.recompute.means import evaluation_means_refresh

    evaluation = tagged_evaluation()
    grade_fully(grade, evaluation, KEYWORDS)
    Keyword.objects.filter(evaluation=evaluation, text="shoes").delete()
    assert not SegmentSums.objects.filter(metric__evaluation=evaluation).exists()
    evaluation_means_refresh(evaluation_id=evaluation.pk)
    assert SegmentSums.objects.filter(metric__evaluation=evaluation, segment="",
                                      weighted=False).count() == 2
    assert precision_means(evaluation)["head", True].value == by_hand([(0.2, 3)])
