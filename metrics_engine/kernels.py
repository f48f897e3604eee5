"""Stage 2 of docs/METRICS.md: every grade metric over aggregated values, vectorised.

Each kernel takes float64 arrays (keywords, m) derived position by position from the
aggregated v_1..v_m on the metric's scale (NaN = null): ``relevant``, ``gains``, ``stop``
..., computed by the functions below, or per-keyword counts of them; it returns one
float64 per keyword. The "all null → null" rule is applied by the caller (batch.py) for
every metric, so kernels may return anything for such rows, except ``recall`` and
``best`` for keywords with m = 0, whose kernel value the caller keeps. Positions are
1-based in the formulas and 0-based in the arrays.

Every kernel computes a keyword from its own row alone, in an order that depends on m
only, so a keyword's value does not depend on its block or on the thread that computes it.
Weighted sums over positions therefore use numpy's own loop (weighted_row_sums), not BLAS:
OpenBLAS's gemv sums a row in an order that depends on the row's place in the call (a few
ulps), and its own threads spin on the cores that the engine's block threads need.
Counts (P, AP, RR, recall) are sums of 0/1 and exact in any order.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=64)
def log2_discounts(length: int) -> np.ndarray:
    """1 / log2(i + 1) for i = 1..length (Järvelin & Kekäläinen 2002, DCG)."""
    weights = 1.0 / np.log2(np.arange(2, length + 2, dtype=np.float64))
    weights.flags.writeable = False
    return weights


@lru_cache(maxsize=64)
def power_discounts(length: int, exponent: float) -> np.ndarray:
    """1 / i ** exponent for i = 1..length (ERR: 1; ERR-0.18: 0.18)."""
    weights = 1.0 / np.arange(1, length + 1, dtype=np.float64) ** exponent
    weights.flags.writeable = False
    return weights


# Per-position inputs of the kernels. Each is an element-wise function of the aggregated
# values, so batch.py computes it through the combination tables (Aggregation.lookup):
# one lookup per snapshot, shared by every metric of the block that needs it.


def relevant(values: np.ndarray) -> np.ndarray:
    """v_i = 1 as 1.0, else 0.0; null counts as not relevant."""
    return (values == 1.0).astype(np.float64)


def judged(values: np.ndarray) -> np.ndarray:
    """v_i is not null, as 1.0 / 0.0."""
    return (~np.isnan(values)).astype(np.float64)


def nulls_as_zero(values: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(values), 0.0, values)


def linear_gains(values: np.ndarray) -> np.ndarray:
    """gain(v) = v; null → 0."""
    return nulls_as_zero(values)


def exponential_gains(values: np.ndarray) -> np.ndarray:
    """gain(v) = 2^v - 1 (Burges et al. 2005); null → 0."""
    return np.exp2(nulls_as_zero(values)) - 1.0


def gains_function(gain: str) -> Callable[[np.ndarray], np.ndarray]:
    """gain(v) of the ``gain`` parameter: linear → v, exponential → 2^v - 1; null → 0."""
    return linear_gains if gain == "linear" else exponential_gains


@lru_cache(maxsize=64)
def stop_probabilities(top_grade: int) -> Callable[[np.ndarray], np.ndarray]:
    """ERR's R_i = (2^{v_i} - 1) / 2^{gmax}, null → 0 (one function per gmax, cached so
    that the combination tables built from it are too)."""

    def stop(values: np.ndarray) -> np.ndarray:
        return (np.exp2(nulls_as_zero(values)) - 1.0) / 2.0**top_grade

    return stop


def row_sums(per_position: np.ndarray) -> np.ndarray:
    """Σ over positions as a product with a ones vector: exact for 0/1 counts."""
    return weighted_row_sums(per_position, np.ones(per_position.shape[1]))


def precision(relevant_count: np.ndarray, judged_count: np.ndarray) -> np.ndarray:
    """P@k = Σ v_i / #{non-null v_i}: the denominator counts judged positions only."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return relevant_count / judged_count


def average_precision(relevant: np.ndarray) -> np.ndarray:
    """AP@k = Σ_{i: v_i=1} (#{j ≤ i: v_j = 1} / i) / R, R = #{i ≤ m: v_i = 1}; R = 0 → 0.

    ``relevant``: (keywords, m) 1.0 where v_i = 1, else 0.0.
    """
    length = relevant.shape[1]
    hits_so_far = np.cumsum(relevant, axis=1)
    precision_sum = (relevant * hits_so_far / _ranks(length)).sum(axis=1)
    relevant_count = hits_so_far[:, -1] if length else np.zeros(relevant.shape[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(relevant_count > 0, precision_sum / relevant_count, 0.0)


@lru_cache(maxsize=64)
def _ranks(length: int) -> np.ndarray:
    ranks = np.arange(1, length + 1, dtype=np.float64)
    ranks.flags.writeable = False
    return ranks


def reciprocal_rank(relevant: np.ndarray) -> np.ndarray:
    """RR@k = 1 / (first i with v_i = 1); none → 0. ``relevant`` as in average_precision."""
    if relevant.shape[1] == 0:
        return np.zeros(relevant.shape[0])
    first = np.argmax(relevant, axis=1)
    found = relevant[np.arange(relevant.shape[0]), first] > 0.0
    return np.where(found, 1.0 / (first + 1.0), 0.0)


MAX_PATTERN_POSITIONS = 12
"""Up to this m, metrics of the relevance pattern alone are tabulated (2^m rows)."""


def relevance_patterns(relevant: np.ndarray) -> np.ndarray:
    """Each keyword's relevance pattern as an integer: Σ_{i: v_i=1} 2^(i-1) (exact)."""
    powers = 2.0 ** np.arange(relevant.shape[1])
    return weighted_row_sums(relevant, powers).astype(np.intp)


@lru_cache(maxsize=128)
def pattern_table(kernel: Callable[[np.ndarray], np.ndarray], length: int) -> np.ndarray:
    """``kernel`` (average_precision, reciprocal_rank) of every relevance pattern of
    ``length`` positions, indexed like relevance_patterns.

    Both kernels compute each keyword from its own row alone, so looking a keyword's
    pattern up here gives the very float the kernel gives on the keyword.
    """
    patterns = np.arange(2**length)[:, None] >> np.arange(length) & 1
    table = kernel(patterns.astype(np.float64))
    table.flags.writeable = False
    return table


def cumulative_gain(zeroed: np.ndarray) -> np.ndarray:
    """CG@k = Σ of the non-null v_i (``zeroed``: the values with null → 0)."""
    return zeroed.sum(axis=1)


def dcg(gains: np.ndarray) -> np.ndarray:
    """DCG@k = Σ gain(v_i) / log2(i + 1), null → 0 (Järvelin & Kekäläinen 2002).

    ``gains``: (keywords, m) gain(v_i), null → 0.
    """
    return weighted_row_sums(gains, log2_discounts(gains.shape[1]))


def ideal_dcg_local(gains: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """IDCG@k from v_1..v_m sorted descending, nulls as 0 (ideal: local). ``present``
    (keywords, m), when given, is False at positions the search did not return: they are
    no v_i, so they sort after every gain instead of as a null's 0 (which only matters on
    a scale with negative gains, where a 0 would push a negative gain down a rank)."""
    if present is not None:
        gains = np.where(present, gains, -np.inf)
    ordered = np.sort(gains, axis=1)[:, ::-1]
    if present is not None:
        ordered = np.where(np.isneginf(ordered), 0.0, ordered)
    # Summed exactly like dcg(): a keyword ranked ideally gets nDCG 1.0, not 1 ± an ulp.
    ordered = np.ascontiguousarray(ordered)
    return weighted_row_sums(ordered, log2_discounts(gains.shape[1]))


def ideal_dcg_pool(pool_values: np.ndarray, k: int, gain: str) -> np.ndarray:
    """IDCG@k from the k best aggregated grades of the keyword's pool (ideal: pool)."""
    ordered = np.sort(gains_function(gain)(pool_values), axis=1)[:, ::-1][:, :k]
    ordered = np.ascontiguousarray(ordered)  # summed like dcg(), as in ideal_dcg_local
    return weighted_row_sums(ordered, log2_discounts(ordered.shape[1]))


def ideal_dcg_max(keyword_count: int, k: int, gain: str, top_grade: int) -> np.ndarray:
    """IDCG@k with the scale's top grade at every one of the k positions (ideal: max)."""
    top_gain = gains_function(gain)(np.array([[float(top_grade)]]))[0, 0]
    return np.full(keyword_count, top_gain * log2_discounts(k).sum())


def ndcg(dcg_values: np.ndarray, ideal_values: np.ndarray) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k; IDCG@k = 0 → 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ideal_values > 0, dcg_values / ideal_values, 0.0)


def expected_reciprocal_rank(stop: np.ndarray, exponent: float) -> np.ndarray:
    """ERR@k = Σ_i (1 / i^e) · R_i · Π_{j<i} (1 - R_j), R_i = (2^{v_i} - 1) / 2^{gmax}.

    Chapelle, Metzler, Zhang & Grinspan 2009 (e = 1); ``err_018`` uses e = 0.18.
    ``stop``: (keywords, m) R_i (stop_probabilities), null → 0.
    """
    length = stop.shape[1]
    reach = np.ones_like(stop)
    if length > 1:
        np.cumprod(1.0 - stop[:, :-1], axis=1, out=reach[:, 1:])
    return weighted_row_sums(stop * reach, power_discounts(length, exponent))


def returned_any(doc_index: np.ndarray) -> np.ndarray:
    """m > 0 per keyword: ``doc_index`` (keywords, m) holds a document (>= 0) anywhere."""
    return (doc_index >= 0).any(axis=1)


def relevant_in_pool(pool_values: np.ndarray) -> np.ndarray:
    """R_pool: the number of pool documents whose aggregated binary value is 1."""
    return np.count_nonzero(pool_values == 1.0, axis=1)


def recall(retrieved_count: np.ndarray, pool_values: np.ndarray) -> np.ndarray:
    """Recall@k = #{i ≤ m: v_i = 1} / R_pool; R_pool = 0 → null."""
    known = relevant_in_pool(pool_values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(known > 0, retrieved_count / known, np.nan)


def f_score(precision_values: np.ndarray, recall_values: np.ndarray, beta: float) -> np.ndarray:
    """Fβ@k = (1 + β²)·P·R / (β²·P + R) (van Rijsbergen 1979); null if either is; P+R=0 → 0."""
    weight = beta * beta
    with np.errstate(invalid="ignore", divide="ignore"):
        harmonic = (1.0 + weight) * precision_values * recall_values / (
            weight * precision_values + recall_values
        )
    return np.where(precision_values + recall_values == 0.0, 0.0, harmonic)


def best(pool_values: np.ndarray, doc_index: np.ndarray) -> np.ndarray:
    """Best@k: 1 if a document holding the pool's highest aggregated grade (> 0) is at a
    position ≤ m, else 0; null when no pool document has a grade.

    ``pool_values`` (keywords, documents) are the pool's aggregated grades; ``doc_index``
    (keywords, m) gives each position's document as an index into them, -1 for none.
    """
    keyword_count = pool_values.shape[0]
    if pool_values.shape[1] == 0:
        return np.full(keyword_count, np.nan)
    top = np.fmax.reduce(pool_values, axis=1)
    present = doc_index >= 0
    position_values = np.take_along_axis(pool_values, np.where(present, doc_index, 0), axis=1)
    holds_top = present & (position_values == top[:, None])
    found = holds_top.any(axis=1) & (top > 0)
    return np.where(np.isnan(top), np.nan, found.astype(np.float64))


def weighted_row_sums(per_position: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_i per_position[:, i] · weights[i] for each row (numpy's loop: see the module doc)."""
    return np.einsum("ij,j->i", per_position, weights)
