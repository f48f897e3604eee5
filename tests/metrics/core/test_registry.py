"""The metric registry's names for people's input: aliases, cutoffs in the name, suggestions."""

import pytest

from metrics.core import ALIASES, METRICS, MetricInputError, metric_spec, resolve_metric_name


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
