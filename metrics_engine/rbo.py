"""Rank-biased overlap between two rankings (not a grade metric)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

from metrics_engine.errors import MetricInputError
from metrics_engine.scales import is_integer


def rbo(a: Sequence[Hashable], b: Sequence[Hashable], *, k: int, p: float = 0.9) -> float:
    """RBO_EXT of the top-k prefixes of two rankings (Webber, Moffat & Zobel 2010, eq. 32).

    With S the shorter prefix (length s) and L the longer (length l), X_d = |S_{:d} ∩ L_{:d}|
    (S_{:d} = all of S for d > s):

        RBO_EXT = (1 - p)/p · (Σ_{d=1..l} X_d/d · p^d + Σ_{d=s+1..l} X_s·(d - s)/(s·d) · p^d)
                  + ((X_l - X_s)/l + X_s/s) · p^l

    which for s = l is (X_k/k)·p^k + (1 - p)/p · Σ_{d=1..k} (X_d/d)·p^d. Both empty → 1;
    exactly one empty → 0. A document repeated within a list counts once in the overlap.
    """
    if not is_integer(k) or k < 1:
        raise MetricInputError("k", f"must be an integer >= 1, not {k!r}")
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 < p < 1.0:
        raise MetricInputError("p", f"must be a number in (0, 1), not {p!r}")
    first, second = list(a)[: int(k)], list(b)[: int(k)]
    if not first and not second:
        return 1.0
    if not first or not second:
        return 0.0
    short, long = (first, second) if len(first) <= len(second) else (second, first)
    s, l = len(short), len(long)  # noqa: E741 - the paper's names
    seen_short: set[Hashable] = set()
    seen_long: set[Hashable] = set()
    overlap = 0
    overlap_at_s = 0
    agreement_sum = 0.0
    extrapolated_sum = 0.0
    for depth in range(1, l + 1):
        # X_d grows by each item that joins one side's set while already on the other side.
        if depth <= s and short[depth - 1] not in seen_short:
            seen_short.add(short[depth - 1])
            overlap += short[depth - 1] in seen_long
        if long[depth - 1] not in seen_long:
            seen_long.add(long[depth - 1])
            overlap += long[depth - 1] in seen_short
        if depth == s:
            overlap_at_s = overlap
        weight = p**depth
        agreement_sum += overlap / depth * weight
        if depth > s:
            extrapolated_sum += overlap_at_s * (depth - s) / (s * depth) * weight
    tail = ((overlap - overlap_at_s) / l + overlap_at_s / s) * p**l
    value = (1.0 - p) / p * (agreement_sum + extrapolated_sum) + tail
    return value if math.isfinite(value) else math.nan
