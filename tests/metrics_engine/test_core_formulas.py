"""Hand-computed values of docs/METRICS.md for each metric, parameter, scale and error."""

import math

import numpy as np
import pytest

from metrics_engine import (
    METRICS,
    SCALES,
    MetricInputError,
    Pool,
    Scale,
    default_transformer,
    evaluate_batch,
    evaluate_keyword,
    mean_over_keywords,
    rbo,
    validate_transformer,
)

LOG3 = math.log2(3)


def value(metric, results, **options):
    options.setdefault("k", 10)
    options.setdefault("scale", "graded")
    return evaluate_keyword(metric, results, **options)


def test_ap_counts_an_ungraded_position_as_irrelevant_but_keeps_its_rank():
    assert value("ap", [[1], [None], [1]], scale="binary") == pytest.approx((1 + 2 / 3) / 2)


def test_precision_takes_the_slot_majority_and_drops_ties():
    assert value("precision", [[1, 1, 0], [0, 1, None], [0, 0, 1]], scale="binary") == 0.5


def test_transform_happens_before_aggregation():
    # graded→binary maps 3→1 and 0→0: a tie, so null; averaging first would give 1.5 → 1.
    assert value("precision", [[3, 0], [1]]) == 1.0
    # graded→detail maps 0→1 and 3→10, then the mean is 5.5.
    assert value("cg_d", [[0, 3]]) == 5.5


def test_default_transformers_follow_the_table():
    assert value("cg", [[1], [4], [5], [8]], scale="detail") == 0 + 1 + 2 + 3
    assert value("cg_d", [[0], [1]], scale="binary") == 1 + 10
    assert value("precision", [[1], [2]], scale="detail") == 0.5
    assert default_transformer("graded", "detail") == {0: 1, 1: 4, 2: 7, 3: 10}
    assert default_transformer("graded", "graded") == {0: 0, 1: 1, 2: 2, 3: 3}


def test_graded_mean_feeds_fractional_values_to_err():
    stop = (2**2.5 - 1) / 8
    assert value("err", [[3, 2]]) == pytest.approx(stop)


def test_err_multiplies_the_chance_of_reaching_each_rank():
    assert value("err", [[3], [3]]) == pytest.approx(7 / 8 + (1 / 2) * (7 / 8) * (1 / 8))
    assert value("err_018", [[2], [3]]) == pytest.approx(3 / 8 + 2**-0.18 * (7 / 8) * (5 / 8))


def test_ndcg_exponential_gain():
    dcg = 3 + 7 / LOG3
    ideal = 7 + 3 / LOG3
    assert value("ndcg", [[2], [3]], params={"gain": "exponential"}) == pytest.approx(dcg / ideal)
    assert value("dcg_d", [[2], [1]], scale="detail", params={"gain": "exponential"}) == (
        pytest.approx(3 + 1 / LOG3)
    )


def test_ndcg_max_ideal_uses_the_metric_scales_top_grade_at_all_k_positions():
    assert value("ndcg_d", [[10], [1]], k=3, scale="detail", params={"ideal": "max"}) == (
        pytest.approx((10 + 1 / LOG3) / (10 + 10 / LOG3 + 10 / 2))
    )


def test_ndcg_pool_ideal_takes_the_k_best_pooled_documents():
    pool = [("x", [3]), ("y", [3]), ("d1", [1])]  # d1's pooled grade is mean(1, 1) = 1
    assert value("ndcg", [[1]], k=2, doc_ids=["d1"], pool=pool, params={"ideal": "pool"}) == (
        pytest.approx(1 / (3 + 3 / LOG3))
    )


def test_recall_and_f_score_nulls_and_zeros():
    assert value("recall", [[None]], scale="binary", pool=[("x", [1])]) is None
    assert value("recall", [[0]], scale="binary") is None
    assert value("f_score", [[0]], scale="binary") is None
    assert value("f_score", [[0], [0]], scale="binary", pool=[("x", [1])]) == 0.0
    # P = 1/2, R = 1/2 with beta 3: (1 + 9) * 1/4 / (9/2 + 1/2) = 0.5
    assert value("f_score", [[1], [0]], scale="binary", pool=[("x", [1])],
                 params={"beta": 3}) == pytest.approx(0.5)


def test_best_uses_the_pooled_grade_of_each_document():
    # d1 is judged 1 and 3 (pooled 2.0), d2 2: both hold the top grade 2, d1 is first.
    results = [[1], [2], [3]]
    assert value("best", results, k=1, doc_ids=["d1", "d2", "d1"]) == 1.0
    assert value("best", [[0], [0]]) == 0.0


def test_recall_and_best_of_a_search_that_returned_nothing_are_0_when_the_pool_knows():
    # m = 0: the pool's relevant / best documents were missed (docs/METRICS.md, Stage 2).
    assert value("recall", [], scale="binary", pool=[("x1", [1]), ("x2", [0])]) == 0.0
    assert value("best", [], pool=[("x1", [3]), ("x2", [1])]) == 0.0
    assert value("best", [], pool=[("x1", [0])]) == 0.0  # top grade 0: nothing is "best"
    # ... null only under their own null condition: R_pool = 0, or a pool with no grade.
    assert value("recall", [], scale="binary", pool=[("x1", [0])]) is None
    assert value("recall", [], scale="binary") is None
    assert value("best", [], pool=[("x1", [None])]) is None
    assert value("best", []) is None
    # m > 0 with nothing graded is not graded yet: null, whatever the pool holds.
    assert value("recall", [[None], [None]], scale="binary", pool=[("x1", [1])]) is None
    assert value("best", [[None]], pool=[("x1", [3])]) is None
    # The other metrics, f_score and ideal: pool included, stay null for m = 0.
    assert value("f_score", [], scale="binary", pool=[("x1", [1])]) is None
    assert value("ndcg", [], pool=[("x1", [3])], params={"ideal": "pool"}) is None
    assert value("precision", [], scale="binary") is None


def test_batch_tells_a_search_that_returned_nothing_from_one_not_graded_yet():
    # Keywords: returned nothing; returned two ungraded documents; returned d1 (relevant),
    # d2 (not). Each keyword's pool also knows x1 (relevant) and x2 (not) from elsewhere.
    grades = np.array([
        [[np.nan], [np.nan]],
        [[np.nan], [np.nan]],
        [[1.0], [0.0]],
    ])
    pool = Pool(
        grades=np.array([
            [[1.0], [0.0], [np.nan], [np.nan]],
            [[np.nan], [np.nan], [1.0], [0.0]],
            [[1.0], [0.0], [1.0], [0.0]],
        ]),
        doc_index=np.array([[-1, -1], [0, 1], [0, 1]]),
    )
    recall = evaluate_batch("recall", grades, k=10, scale="binary", pool=pool)
    np.testing.assert_array_equal(recall, [0.0, np.nan, 0.5])  # 1 of R_pool = 2
    graded = np.where(np.isnan(grades), np.nan, grades * 3)  # d1 → 3, d2 → 0
    graded_pool = Pool(grades=pool.grades * 3, doc_index=pool.doc_index)
    best = evaluate_batch("best", graded, k=10, scale="graded", pool=graded_pool)
    np.testing.assert_array_equal(best, [0.0, np.nan, 1.0])
    # A keyword that returned nothing and whose pool knows no relevant document: null.
    empty_pool = Pool(grades=np.array([[[0.0]]]), doc_index=np.full((1, 0), -1))
    assert np.isnan(
        evaluate_batch("recall", np.full((1, 0, 1), np.nan), k=5, scale="binary",
                       pool=empty_pool)
    ).all()


def test_batch_recall_needs_each_positions_document():
    with pytest.raises(MetricInputError, match=r"^pool\.doc_index: recall and best need"):
        evaluate_batch("recall", np.array([[[1.0]]]), k=5, scale="binary",
                       pool=Pool(grades=np.array([[[1.0]]])))


def test_admin_scale_runs_graded_metrics_directly_and_needs_transformers_otherwise():
    stars = Scale("stars", 1, 5)
    assert value("cg", [[5], [1]], scale=stars) == 6.0
    assert value("err", [[5]], scale=stars) == pytest.approx(31 / 32)
    with pytest.raises(MetricInputError) as raised:
        value("precision", [[5]], scale=stars)
    assert str(raised.value) == "transformers.stars->binary: no default transformer; define one"
    mapping = {"1": 0, "2": 0, "3": 1, "4": 1, "5": 1}
    assert value("precision", [[2], [4]], scale=stars,
                 transformers={"stars->binary": mapping}) == 0.5


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({0: 0, 1: 1, 2: 1}, "transformers.graded->binary: grade 3 is not mapped"),
        ({0: 0, 1: 1, 2: 1, 3: 2},
         "transformers.graded->binary: grade 3 maps to 2, which is not a grade of the binary"
         " scale 0..1"),
        ({0: 0, 1: 1, 2: 1, 3: 1, 4: 1},
         "transformers.graded->binary: 4 is not a grade of the graded scale 0..3"),
    ],
)
def test_it_rejects_incomplete_or_invalid_transformers(mapping, message):
    with pytest.raises(MetricInputError) as raised:
        validate_transformer(mapping, SCALES["graded"], SCALES["binary"])
    assert str(raised.value) == message
    assert raised.value.field == "transformers.graded->binary"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"k": True}, "k"),
        ({"k": 2.5}, "k"),
        ({"params": {"gian": "linear"}}, "params.gian"),
        ({"params": {"gain": "log"}}, "params.gain"),
        ({"params": {"beta": -1}}, "params.beta"),
        ({"scale": "stars"}, "scale"),
    ],
)
def test_it_rejects_bad_options_naming_the_field(options, field):
    with pytest.raises(MetricInputError) as raised:
        value("ndcg", [[1]], **options)
    assert raised.value.field == field
    assert str(raised.value).startswith(f"{field}: ")


def test_batch_validates_grades_and_shapes():
    grades = np.array([[[1.0], [4.0]]])
    with pytest.raises(MetricInputError, match=r"^grades: 4 is outside the graded scale 0\.\.3$"):
        evaluate_batch("cg", grades, k=2, scale="graded")
    with pytest.raises(MetricInputError, match=r"^grades: 1\.5 is not an integer$"):
        evaluate_batch("cg", np.array([[[1.5]]]), k=2, scale="graded")
    with pytest.raises(MetricInputError, match=r"^grades: inf is outside"):
        evaluate_batch("cg", np.array([[[np.inf]]]), k=2, scale="graded")
    with pytest.raises(MetricInputError, match=r"^grades: must be a 3-D array"):
        evaluate_batch("cg", np.zeros((2, 2)), k=2, scale="graded")
    with pytest.raises(MetricInputError, match=r"^pool: metric 'recall' needs the keyword pool$"):
        evaluate_batch("recall", np.zeros((1, 1, 1)), k=2, scale="binary")


def test_batch_reads_only_positions_up_to_k():
    grades = np.array([[[1.0], [np.nan]], [[np.nan], [1.0]]])
    assert evaluate_batch("rr", grades, k=1, scale="binary")[0] == 1.0
    assert np.isnan(evaluate_batch("rr", grades, k=1, scale="binary")[1])


def test_batch_pool_arrays_feed_recall_and_best():
    binary = np.array([[[1.0], [0.0]]])
    binary_pool = Pool(grades=np.array([[[1.0], [0.0], [1.0]]]), doc_index=np.array([[0, 1]]))
    assert evaluate_batch("recall", binary, k=5, scale="binary", pool=binary_pool).tolist() == [
        0.5
    ]
    graded = np.array([[[1.0], [0.0]], [[3.0], [np.nan]]])
    graded_pool = Pool(
        grades=np.array([[[1.0], [0.0], [2.0]], [[3.0], [3.0], [np.nan]]]),
        doc_index=np.array([[0, 1], [0, -1]]),
    )
    # Keyword 1's best document (index 2, grade 2) was not retrieved; keyword 2's was.
    best = evaluate_batch("best", graded, k=1, scale="graded", pool=graded_pool)
    assert best.tolist() == [0.0, 1.0]


def test_mean_over_keywords_skips_nulls_and_counts_the_rest():
    assert mean_over_keywords([0.5, None, math.nan, 1.0]) == (0.75, 2)
    assert mean_over_keywords(np.array([np.nan])) == (None, 0)


def test_mean_over_keywords_is_the_same_float_in_any_order():
    # A running sum depends on the order: 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1 in binary.
    forward, backward = [0.1, 0.2, 0.3], [0.3, 0.2, 0.1]
    assert sum(forward) / 3 != sum(backward) / 3
    assert mean_over_keywords(forward) == mean_over_keywords(backward) == (
        math.fsum(forward) / 3, 3)
    assert mean_over_keywords(np.array(forward))[0] == math.fsum(backward) / 3


def test_rbo_truncates_to_k_and_counts_a_repeated_document_once():
    assert rbo(["x", "y"], ["y", "x"], k=1) == 0.0
    assert rbo(["x", "y"], ["y", "x"], k=2) == pytest.approx(0.1 / 0.9 * 0.81 + 0.81)
    assert rbo(["x", "x"], ["x", "y"], k=2, p=0.5) == pytest.approx(
        (0.5 / 0.5) * (1 / 1 * 0.5 + 1 / 2 * 0.25) + 1 / 2 * 0.25
    )
    assert rbo([], [], k=3) == 1.0


def test_registry_lists_every_metric_with_its_scale_and_params():
    assert list(METRICS) == [
        "precision", "ap", "rr", "cg", "dcg", "ndcg", "err", "err_018",
        "cg_d", "dcg_d", "ndcg_d", "recall", "f_score", "best",
    ]
    assert METRICS["ndcg_d"].scale == "detail"
    assert METRICS["ndcg"].params == ("gain", "ideal")
    assert [code for code, spec in METRICS.items() if spec.needs_pool] == [
        "recall", "f_score", "best"
    ]
