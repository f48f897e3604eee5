"""Stage 2 of METRICS.md: every grade metric over aggregated values, vectorised.

Each kernel takes ``values``: a float64 array (keywords, m) of the aggregated v_1..v_m on
the metric's scale, NaN = null, and returns one float64 per keyword. The "all null → null"
rule is applied by the caller (batch.py) for every metric, so kernels may return anything
for such rows. Positions are 1-based in the formulas and 0-based in the arrays.

Sums over positions are matrix products with a weight vector (BLAS): exact for the
integer counts of P, AP and RR, within a few ulps of the left-to-right sum otherwise.
"""

from __future__ import annotations

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


@lru_cache(maxsize=64)
def _prefix_sum_matrix(length: int) -> np.ndarray:
    matrix = np.triu(np.ones((length, length), dtype=np.float64))
    matrix.flags.writeable = False
    return matrix


def _relevant(values: np.ndarray) -> np.ndarray:
    """v_i = 1 as 0.0 / 1.0; null counts as not relevant."""
    return (values == 1.0).astype(np.float64)


def _nulls_as_zero(values: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(values), 0.0, values)


def gains(values: np.ndarray, gain: str) -> np.ndarray:
    """gain(v): linear → v, exponential → 2^v - 1 (Burges et al. 2005); null → 0."""
    zeroed = _nulls_as_zero(values)
    return zeroed if gain == "linear" else np.exp2(zeroed) - 1.0


def precision(values: np.ndarray) -> np.ndarray:
    """P@k = Σ v_i / #{non-null v_i}: the denominator counts judged positions only."""
    judged = np.count_nonzero(~np.isnan(values), axis=1)
    relevant = np.count_nonzero(values == 1.0, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return relevant / judged


def average_precision(values: np.ndarray) -> np.ndarray:
    """AP@k = Σ_{i: v_i=1} (#{j ≤ i: v_j = 1} / i) / R, R = #{i ≤ m: v_i = 1}; R = 0 → 0."""
    length = values.shape[1]
    relevant = _relevant(values)
    hits_so_far = relevant @ _prefix_sum_matrix(length)
    ranks = np.arange(1, length + 1, dtype=np.float64)
    precision_sum = (relevant * hits_so_far / ranks).sum(axis=1)
    relevant_count = hits_so_far[:, -1] if length else np.zeros(values.shape[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(relevant_count > 0, precision_sum / relevant_count, 0.0)


def reciprocal_rank(values: np.ndarray) -> np.ndarray:
    """RR@k = 1 / (first i with v_i = 1); none → 0."""
    if values.shape[1] == 0:
        return np.zeros(values.shape[0])
    relevant = values == 1.0
    first = np.argmax(relevant, axis=1)
    found = relevant[np.arange(values.shape[0]), first]
    return np.where(found, 1.0 / (first + 1.0), 0.0)


def cumulative_gain(values: np.ndarray) -> np.ndarray:
    """CG@k = Σ of the non-null v_i."""
    return _nulls_as_zero(values).sum(axis=1)


def dcg(values: np.ndarray, gain: str) -> np.ndarray:
    """DCG@k = Σ gain(v_i) / log2(i + 1), null → 0 (Järvelin & Kekäläinen 2002)."""
    return gains(values, gain) @ log2_discounts(values.shape[1])


def ideal_dcg_local(values: np.ndarray, gain: str) -> np.ndarray:
    """IDCG@k from v_1..v_m sorted descending, nulls as 0 (ideal: local)."""
    ordered = np.sort(gains(values, gain), axis=1)[:, ::-1]
    return ordered @ log2_discounts(values.shape[1])


def ideal_dcg_pool(pool_values: np.ndarray, k: int, gain: str) -> np.ndarray:
    """IDCG@k from the k best aggregated grades of the keyword's pool (ideal: pool)."""
    ordered = np.sort(gains(pool_values, gain), axis=1)[:, ::-1][:, :k]
    return ordered @ log2_discounts(ordered.shape[1])


def ideal_dcg_max(keyword_count: int, k: int, gain: str, top_grade: int) -> np.ndarray:
    """IDCG@k with the scale's top grade at every one of the k positions (ideal: max)."""
    top_gain = gains(np.array([[float(top_grade)]]), gain)[0, 0]
    return np.full(keyword_count, top_gain * log2_discounts(k).sum())


def ndcg(dcg_values: np.ndarray, ideal_values: np.ndarray) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k; IDCG@k = 0 → 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ideal_values > 0, dcg_values / ideal_values, 0.0)


def expected_reciprocal_rank(values: np.ndarray, top_grade: int, exponent: float) -> np.ndarray:
    """ERR@k = Σ_i (1 / i^e) · R_i · Π_{j<i} (1 - R_j), R_i = (2^{v_i} - 1) / 2^{gmax}.

    Chapelle, Metzler, Zhang & Grinspan 2009 (e = 1); ``err_018`` uses e = 0.18. Null → 0.
    """
    length = values.shape[1]
    stop = (np.exp2(_nulls_as_zero(values)) - 1.0) / 2.0**top_grade
    reach = np.ones_like(stop)
    if length > 1:
        np.cumprod(1.0 - stop[:, :-1], axis=1, out=reach[:, 1:])
    return (stop * reach) @ power_discounts(length, exponent)


def relevant_in_pool(pool_values: np.ndarray) -> np.ndarray:
    """R_pool: the number of pool documents whose aggregated binary value is 1."""
    return np.count_nonzero(pool_values == 1.0, axis=1)


def recall(values: np.ndarray, pool_values: np.ndarray) -> np.ndarray:
    """Recall@k = #{i ≤ m: v_i = 1} / R_pool; R_pool = 0 → null."""
    retrieved = np.count_nonzero(values == 1.0, axis=1)
    known = relevant_in_pool(pool_values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(known > 0, retrieved / known, np.nan)


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
