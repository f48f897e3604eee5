"""The metric registry: names people type, and one entry per metric (label, scale,
parameters, batch function) that the engine dispatches through."""

from dataclasses import fields

import numpy as np
import pytest

from metrics_engine import (
    ALIASES,
    METRICS,
    PARAMETERS,
    SCALES,
    BatchInputs,
    MetricInputError,
    MetricSpec,
    Params,
    evaluate_batch,
    evaluate_batch_many,
    evaluate_keyword,
    kernels,
    metric_code_at_k,
    metric_column,
    metric_key,
    metric_key_label,
    metric_label,
    metric_line,
    metric_spec,
    resolve_metric_name,
    resolve_params,
)


@pytest.mark.parametrize(("typed", "expected"), [
    ("p@10", ("precision", 10)),
    ("P@10", ("precision", 10)),
    ("mp@10", ("precision", 10)),
    ("precision@10", ("precision", 10)),
    ("P_10", ("precision", 10)),  # trec_eval
    ("map@10", ("ap", 10)),  # MAP@k is the mean of AP@k over keywords
    ("map_cut_10", ("ap", 10)),
    ("mrr@10", ("rr", 10)),
    ("ndcg_cut@10", ("ndcg", 10)),
    ("ndcg_cut_10", ("ndcg", 10)),
    ("ndcg_cut.10", ("ndcg", 10)),
    ("nDCG@10", ("ndcg", 10)),
    ("recall@10", ("recall", 10)),
    ("err@10", ("err", 10)),
    ("ERR-0.18@5", ("err_018", 5)),
    ("err_018", ("err_018", None)),  # a code ending in digits is not a cutoff
    ("f1@10", ("f_score", 10)),
    ("ndcg_d", ("ndcg_d", None)),
    (" map ", ("ap", None)),
])
def test_it_resolves_the_names_people_type_to_codes_and_cutoffs(typed, expected):
    assert resolve_metric_name(typed) == expected


@pytest.mark.parametrize(("typed", "message"), [
    ("ndgc", "code: unknown metric code 'ndgc'; did you mean 'ndcg'?"),
    ("ndgc@10", "code: unknown metric code 'ndgc'; did you mean 'ndcg'?"),
    ("ndgc_10", "code: unknown metric code 'ndgc'; did you mean 'ndcg'?"),
    ("precison@5", "code: unknown metric code 'precison'; did you mean 'precision'?"),
    ("mmr@10", "code: unknown metric code 'mmr'; did you mean 'rr' ('mrr')?"),
    ("zzz", "code: unknown metric code 'zzz' (known: " + ", ".join(METRICS) + ")"),
    ("ndcg@ten", "code: write code@k with a whole k, e.g. ndcg@10, not 'ndcg@ten'"),
    ("ndcg@²", "code: write code@k with a whole k, e.g. ndcg@10, not 'ndcg@²'"),
    ("", "code: name a metric code, e.g. ndcg or ndcg@10"),
    (None, "code: name a metric code, e.g. ndcg or ndcg@10"),
])
def test_it_answers_an_unknown_name_with_the_nearest_code_naming_the_field(typed, message):
    with pytest.raises(MetricInputError) as raised:
        resolve_metric_name(typed)
    assert str(raised.value) == message


def test_it_names_the_field_it_is_given():
    with pytest.raises(MetricInputError, match=r"^metric: unknown metric code 'ndgc'"):
        resolve_metric_name("ndgc@3", "metric")


def test_every_alias_names_a_code_and_no_alias_shadows_a_code():
    assert set(ALIASES.values()) <= set(METRICS)
    assert not set(ALIASES) & set(METRICS)


def test_the_engine_itself_takes_the_codes_alone():
    # docs/METRICS.md: an unknown metric code is an error; aliases are for people's input.
    with pytest.raises(MetricInputError, match=r"^metric: unknown metric code 'map'$"):
        metric_spec("map")


# --- one entry per metric: identity, label, scale, parameters and batch function ---


@pytest.mark.parametrize("code", list(METRICS))
def test_every_entry_carries_its_code_label_scale_parameters_and_batch_function(code):
    spec = METRICS[code]
    assert spec.code == code
    assert "@k" in spec.name and spec.label(7) == spec.name.replace("@k", "@7")
    assert spec.scale in SCALES
    assert spec.description.strip()
    assert set(spec.params) <= set(PARAMETERS)
    assert callable(spec.batch)


def test_the_parameter_defaults_are_those_of_params():
    assert {spec.name: spec.default for spec in PARAMETERS.values()} == {
        f.name: f.default for f in fields(Params)}
    assert resolve_params({}) == Params() == Params("linear", "local", 1.0)


def _fake_batch(inputs: BatchInputs) -> np.ndarray:
    # The number of graded positions up to k, times beta: reads the block and a parameter.
    return inputs.block.count(kernels.judged, inputs.m) * inputs.params.beta


def test_a_new_entry_is_dispatched_by_the_batch_engine_through_the_registry(monkeypatch):
    monkeypatch.setitem(METRICS, "graded_count", MetricSpec(
        "graded_count", "Graded@k", "graded", "Graded positions up to k.", _fake_batch,
        ("beta",)))
    grades = np.array([[[3.0], [np.nan], [0.0]], [[np.nan], [np.nan], [np.nan]]])
    values = evaluate_batch("graded_count", grades, k=3, scale="graded", params={"beta": 2})
    assert values[0] == 4.0 and np.isnan(values[1])  # the all-null rule still applies
    shared = evaluate_batch_many([("graded_count", 1), ("precision", 3)], grades,
                                 scale="graded")
    assert shared[0][0] == 1.0 and shared[1][0] == 0.5  # graded 3 → relevant, 0 → not
    assert evaluate_keyword("graded_count", [[2], [None]], k=5, scale="graded") == 1.0
    assert metric_label("graded_count", 5, {}) == "Graded@5"


def test_an_unregistered_code_is_refused_by_the_engine():
    with pytest.raises(MetricInputError, match=r"^metric: unknown metric code 'graded_count'"):
        evaluate_batch("graded_count", np.zeros((1, 1, 1)), k=1, scale="graded")


@pytest.mark.parametrize(("code", "k", "params", "label"), [
    ("ndcg", 10, {}, "nDCG@10"),
    ("ndcg", 10, {"ideal": "pool", "gain": "exponential"}, "nDCG@10 gain=exponential ideal=pool"),
    ("precision", 5, {}, "P@5"),
    ("ap", 10, None, "AP@10"),
    ("err_018", 3, {}, "ERR-0.18@3"),
    ("ndcg_d", 20, {"gain": "linear"}, "nDCG@20 (detail) gain=linear"),
    ("f_score", 10, {"beta": 2.0}, "F-beta@10 beta=2.0"),
    ("gone", 4, {"x": 1}, "gone@4 x=1"),  # a code the registry no longer knows
])
def test_the_page_label_of_a_configured_metric_is_as_written_today(code, k, params, label):
    assert metric_label(code, k, params) == label


@pytest.mark.parametrize(("key", "label"), [
    (("ndcg", 10, (("gain", "linear"), ("ideal", "local"))), "nDCG@10"),
    (("ndcg", 10, (("gain", "exponential"), ("ideal", "local"))), "nDCG@10 gain=exponential"),
    (("f_score", 5, (("beta", 1.0),)), "F-beta@5"),
    (("f_score", 5, (("beta", 0.5),)), "F-beta@5 beta=0.5"),
    (("recall", 10, ()), "Recall@10"),
    (("gone", 3, (("x", "1"),)), "gone@3 x=1"),
])
def test_the_label_of_a_metric_identity_leaves_out_default_parameters(key, label):
    assert metric_key_label(*key) == label


def test_the_code_forms_of_exports_forms_and_commands_are_as_written_today():
    assert metric_code_at_k("ndcg", 10) == "ndcg@10"
    assert metric_column("ndcg", 10, {}) == "ndcg@10"
    assert metric_column("ndcg", 10, {"ideal": "pool", "gain": "exponential"}) == (
        "ndcg@10[gain=exponential,ideal=pool]")
    assert metric_line("f_score", 10, {"beta": 2.0}) == "f_score@10 beta=2"
    assert metric_line("f_score", 10, {"beta": 0.5}) == "f_score@10 beta=0.5"
    assert metric_line("ndcg", 5, {"gain": "exponential"}) == "ndcg@5 gain=exponential"
    assert metric_line("precision", 5, {}) == "precision@5"


def test_a_metric_key_fills_in_the_defaults_of_the_parameters_the_metric_reads():
    assert metric_key("ndcg", 10, {}) == metric_key("ndcg", 10, {"gain": "linear"}) == (
        "ndcg", 10, (("gain", "linear"), ("ideal", "local")))
    assert metric_key("precision", 5, {"gain": "exponential"}) == ("precision", 5, ())
    assert metric_key("f_score", 5, {"beta": 2}) == ("f_score", 5, (("beta", 2.0),))
    # What the registry refuses keeps its given parameters, as strings.
    assert metric_key("gone", 3, {"x": 1}) == ("gone", 3, (("x", "1"),))
    assert metric_key("ndcg", 3, {"gain": "cubic"}) == ("ndcg", 3, (("gain", "cubic"),))
    assert metric_key_label(*metric_key("ndcg", 10, {"gain": "exponential"})) == (
        "nDCG@10 gain=exponential")


def test_a_config_reads_the_pool_for_a_pool_metric_or_an_ideal_of_pool_only():
    from metrics_engine import config_reads_pool, pool_reading_codes

    assert config_reads_pool("recall", {}) is True
    assert config_reads_pool("best", None) is True
    assert config_reads_pool("ndcg", {"ideal": "pool"}) is True
    assert config_reads_pool("ndcg", {"ideal": "local"}) is False
    assert config_reads_pool("ndcg", {}) is False
    assert config_reads_pool("precision", {"ideal": "pool"}) is False
    # What the registry refuses reads nothing: its run records the error instead.
    assert config_reads_pool("gone", {}) is False
    assert config_reads_pool("recall", {"nope": 1}) is False
    assert config_reads_pool("ndcg", {"ideal": "everywhere"}) is False
    always, by_ideal = pool_reading_codes()
    assert set(always) == {code for code, spec in METRICS.items() if spec.needs_pool}
    assert set(by_ideal) == {code for code, spec in METRICS.items()
                             if "ideal" in spec.params and not spec.needs_pool}
    assert "ndcg" in by_ideal and "recall" in always
