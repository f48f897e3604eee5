"""The click simulator: deterministic per seed, and its models do what they say on cases
whose outcome is certain."""

import numpy as np
import pytest

from behaviour.core.simulate import (
    Sessions,
    document_position_counts,
    position_bias,
    simulate_query,
)


def test_position_bias_is_one_over_k_to_the_power():
    assert position_bias(4) == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4])
    assert position_bias(3, power=2) == pytest.approx([1, 1 / 4, 1 / 9])


def test_one_seed_gives_the_same_sessions():
    relevance = np.array([0.9, 0.5, 0.2, 0.1])
    first = simulate_query(np.random.default_rng(3), relevance, sessions=50)
    second = simulate_query(np.random.default_rng(3), relevance, sessions=50)
    assert np.array_equal(first.rankings, second.rankings)
    assert np.array_equal(first.clicks, second.clicks)
    assert np.array_equal(first.dwell_seconds, second.dwell_seconds, equal_nan=True)


def test_a_noiseless_ranker_shows_the_documents_by_relevance():
    found = simulate_query(np.random.default_rng(0), np.array([0.2, 0.9, 0.5]), sessions=4,
                           ranker_noise=0, session_noise=0)
    assert found.rankings.tolist() == [[1, 2, 0]] * 4


def test_pbm_clicks_only_examined_positions():
    # Everything attractive; position 1 always read, position 2 never.
    found = simulate_query(np.random.default_rng(1), np.array([1.0, 1.0]), sessions=20,
                           bias=np.array([1.0, 0.0]))
    assert found.clicks[:, 0].all() and not found.clicks[:, 1].any()
    assert (found.dwell_seconds[:, 0] > 0).all() and np.isnan(found.dwell_seconds[:, 1]).all()


def test_cascade_stops_at_the_first_attractive_result():
    # Every result attracts and a noiseless ranker shows 0, 1, 2: each session clicks
    # position 1 and reads no further (a PBM with bias 1 would click all three).
    found = simulate_query(np.random.default_rng(2), np.array([1.0, 1.0, 1.0]), sessions=30,
                           model="cascade", ranker_noise=0, session_noise=0)
    assert found.rankings.tolist() == [[0, 1, 2]] * 30
    assert found.clicks.tolist() == [[True, False, False]] * 30
    pbm = simulate_query(np.random.default_rng(2), np.array([1.0, 1.0, 1.0]), sessions=30,
                         bias=np.ones(3), ranker_noise=0, session_noise=0)
    assert pbm.clicks.all()


def test_cascade_never_clicks_twice_in_a_session():
    found = simulate_query(np.random.default_rng(5), np.linspace(0.1, 0.9, 8), sessions=500,
                           model="cascade")
    assert (found.clicks.sum(axis=1) <= 1).all()
    assert found.clicks.any()


def test_counts_per_document_and_position_by_hand():
    # Session 1 shows 0, 1 and clicks 0; session 2 shows 1, 0 and clicks both.
    found = Sessions(rankings=np.array([[0, 1], [1, 0]], dtype=np.int32),
                     clicks=np.array([[True, False], [True, True]]),
                     dwell_seconds=np.array([[1.0, np.nan], [2.0, 3.0]]))
    impressions, clicks = document_position_counts(found, 3)
    assert impressions.tolist() == [[1, 1], [1, 1], [0, 0]]
    assert clicks.tolist() == [[1, 1], [1, 0], [0, 0]]


def test_it_refuses_relevance_outside_zero_one():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        simulate_query(np.random.default_rng(0), np.array([1.2]), sessions=1)
