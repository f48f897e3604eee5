"""Bounds under missing grades (docs/METRICS.md): where a keyword's value can still go.

``keyword_bounds`` takes one keyword the way ``evaluate_keyword`` does and returns
(lower, upper, exact). Three paths, cheapest first; each gives every number through the
evaluate path itself (batch.py), never through a formula of its own:

1. **Monotone fill** (exact). Stage 1 is monotone in each slot: a binary majority vote
   cannot lose a 1 when a slot's transformed grade goes 0 → 1, and the mean of a snapshot's
   slots, once every slot is graded, divides by the fixed slot count, so it rises with each
   slot's transformed grade. Stage 0 need not be monotone (a transformer may map 2 → 0 and
   1 → 1), so each null slot is filled with the grade whose *transformed* value is lowest
   (highest); every completion's v_i then lies between the two fills' v_i. For the metrics
   below, which do not fall when any v_i rises, those two completions are the extremes:
   - ``cg``, ``cg_d``: Σ v_i.
   - ``dcg``, ``dcg_d``: Σ gain(v_i) · 1/log2(i+1); both gains rise with v, weights > 0.
   - ``ndcg``/``ndcg_d`` with ``ideal: max``: DCG over a constant (the scale's top grade at
     k positions) that does not depend on any grade (a constant ≤ 0 gives 0 throughout).
   - ``err``, ``err_018`` on scales with lo ≥ 0: with R_j ∈ [0, 1) and discounts d_i
     non-increasing, ∂ERR/∂R_i = Π_{j<i}(1-R_j) · (d_i - Σ_{l>i} d_l R_l Π_{i<j<l}(1-R_j))
     ≥ Π_{j<i}(1-R_j) · d_i · (1 - P(stop after i)) ≥ 0, and R_i rises with v_i. (A custom
     scale with negative grades gives R < 0, where the argument fails: not this path.)
   - ``rr``: 1 / first relevant position; a new relevant position can only move it up.
   - ``precision``: Σ relevant / #judged. Its denominator is not monotone in general, but a
     completion grades every slot, so a position with an odd number of slots always ends
     judged (no tie): the denominator is the same in every completion, and the numerator
     rises. With an even number of slots a tie can leave a position null, so the
     denominator moves: not this path (nor ``rr``'s, whose all-null rule would move too).
   The all-null rule (batch.py) must not depend on the completion either: with the mean,
   every position that has a slot ends non-null; with the vote, the odd-slot condition.
2. **Distinct outcomes** (exact). A metric reads each position's aggregated value (and, for
   the pool metrics, each document's pooled value), not the slots. Slots are completed
   independently per *unit* (a position, or for the pool metrics a document with all its
   positions and pool entries, which share slots), so per unit one completion is kept for
   each distinct outcome and the product of those is evaluated: e.g. AP over 10 ungraded
   single-slot positions is 2^10 = 1024 completions on any scale, not 10^10 on detail.
3. **Sound range** (exact=False) when the product exceeds MAX_COMPLETIONS: the metric's
   natural range, or for nDCG DCG(low fill) / IDCG(high fill) .. DCG(high) / IDCG(low),
   both of which are monotone (an ideal DCG is a descending sort of gains under
   non-increasing discounts); it always contains the exact bounds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

import metrics_engine.kernels as kernels
from metrics_engine.aggregate import Aggregation, shared_aggregation
from metrics_engine.batch import evaluate_keyword, evaluate_keywords, mean_over_keywords
from metrics_engine.pool import GradeList
from metrics_engine.registry import (
    metric_scale,
    metric_spec,
    needs_pool,
    resolve_params,
    validate_k,
)
from metrics_engine.scales import Scale, resolve_scale
from metrics_engine.transform import resolve_transformer
from metrics_engine.weighted import weighted_mean

MAX_COMPLETIONS = 4096
"""Most completions path 2 evaluates for one keyword; past it, path 3."""
MAX_UNIT_COMPLETIONS = 1 << 14
"""Most completions of one unit's slots enumerated to find its distinct outcomes."""

_MONOTONE = frozenset({"cg", "cg_d", "dcg", "dcg_d", "err", "err_018", "rr", "precision"})
_UNIT_RANGE = frozenset({"precision", "ap", "rr", "best"})


class KeywordBounds(NamedTuple):
    """lower/upper of a metric over the completions (None = every completion is null);
    ``exact`` False when they are wider sound bounds (lower ≤ exact lower, upper ≥ exact
    upper), which the application must say next to them."""

    lower: float | None
    upper: float | None
    exact: bool


class _Entry(NamedTuple):
    doc: Hashable
    grades: list[Any]
    position: int | None  # 0-based result position; None for a pool entry


def keyword_bounds(
    metric: str,
    results: Sequence[GradeList],
    *,
    k: int,
    scale: str | Scale,
    params: Mapping[str, Any] | None = None,
    transformers: Mapping[str, Any] | None = None,
    pool: Sequence[tuple[Hashable, GradeList]] | None = None,
    doc_ids: Sequence[Hashable] | None = None,
) -> KeywordBounds:
    """Bounds of one keyword's value over every completion of its null slots (results and
    pool), arguments as ``evaluate_keyword``'s. Invalid input raises MetricInputError."""
    evaluation_scale = resolve_scale(scale)
    spec = metric_spec(metric)
    resolved = resolve_params(params)
    k = validate_k(k)
    value = evaluate_keyword(  # validates everything, grades included
        metric, results, k=k, scale=evaluation_scale, params=params,
        transformers=transformers, pool=pool, doc_ids=doc_ids,
    )
    target = metric_scale(spec, evaluation_scale)
    transformer = resolve_transformer(evaluation_scale, target, transformers)
    aggregation = shared_aggregation(evaluation_scale, target, transformer)
    uses_pool = needs_pool(metric, resolved)
    ids = list(doc_ids) if doc_ids is not None else [("position", i) for i in range(len(results))]
    entries = [_Entry(doc, list(grades), i)
               for i, (doc, grades) in enumerate(zip(ids, results, strict=True))]
    if uses_pool:
        entries += [_Entry(doc, list(grades), None) for doc, grades in pool or []]
    m = min(k, len(results))
    units = _units(entries, m, uses_pool)
    if not units:
        return KeywordBounds(value, value, True)

    def evaluate(completions: list[list[_Entry]]) -> np.ndarray:
        return evaluate_keywords(
            metric,
            [[e.grades for e in c if e.position is not None] for c in completions],
            k=k, scale=evaluation_scale, params=params, transformers=transformers,
            pools=[[(e.doc, e.grades) for e in c if e.position is None] for c in completions]
            if uses_pool else None,
            doc_ids=[[e.doc for e in c if e.position is not None] for c in completions],
        )

    low_grade = min(evaluation_scale.grades, key=lambda grade: transformer[grade])
    high_grade = max(evaluation_scale.grades, key=lambda grade: transformer[grade])
    if _monotone(spec.code, resolved.ideal, target, aggregation, entries, m):
        values = evaluate([_fill(entries, units, low_grade), _fill(entries, units, high_grade)])
        return KeywordBounds(_float(values[0]), _float(values[1]), True)
    exact = _distinct_outcomes(entries, units, m, uses_pool, evaluation_scale, aggregation,
                               evaluate)
    if exact is not None:
        return KeywordBounds(*exact, True)
    return _sound_range(spec.code, resolved.gain, resolved.ideal, k, target, aggregation,
                        entries, units, m, low_grade, high_grade)


def bounds_mean(bounds: Iterable[KeywordBounds],
                weights: Sequence[int] | None = None) -> KeywordBounds:
    """A mean over keywords: the mean of their non-null lowers and of their non-null uppers
    (docs/METRICS.md), weighted when `weights` are given (one per keyword, "Weighted means
    and segments"), exact when every keyword's bounds are."""
    bounds = list(bounds)
    if weights is None:
        lower = mean_over_keywords([b.lower for b in bounds])[0]
        upper = mean_over_keywords([b.upper for b in bounds])[0]
    else:
        lower = weighted_mean([b.lower for b in bounds], weights)
        upper = weighted_mean([b.upper for b in bounds], weights)
    return KeywordBounds(lower, upper, all(b.exact for b in bounds))


def bounds_decision(a: KeywordBounds, b: KeywordBounds) -> int:
    """The comparison of two means' bounds (docs/METRICS.md, "decided"): +1 when B is better
    whatever the ungraded slots turn out to be (lower(B) - upper(A) > 0), -1 when A is
    (upper(B) - lower(A) < 0), 0 while it is open or either side has no bounds."""
    if None in (a.lower, a.upper, b.lower, b.upper):
        return 0
    if b.lower - a.upper > 0:
        return 1
    if b.upper - a.lower < 0:
        return -1
    return 0


def _units(entries: list[_Entry], m: int, uses_pool: bool) -> list[list[int]]:
    """Groups of entries whose null slots are completed together, each with a null slot
    the metric reads: positions ≤ m, or for the pool metrics documents (every entry of a
    document is pooled, results beyond k included)."""
    groups: dict[Hashable, list[int]] = {}
    for index, entry in enumerate(entries):
        if uses_pool:
            groups.setdefault(("doc", entry.doc), []).append(index)
        elif entry.position is not None and entry.position < m:
            groups[("position", entry.position)] = [index]
    return [members for members in groups.values()
            if any(grade is None for i in members for grade in entries[i].grades)]


def _fill(entries: list[_Entry], units: list[list[int]], grade: int) -> list[_Entry]:
    filled = list(entries)
    for members in units:
        for i in members:
            filled[i] = entries[i]._replace(
                grades=[grade if g is None else g for g in entries[i].grades])
    return filled


def _monotone(code: str, ideal: str, target: Scale, aggregation: Aggregation,
              entries: list[_Entry], m: int) -> bool:
    """Whether path 1 holds (module docstring): a metric that never falls as a v_i rises,
    whose judged positions are the same in every completion."""
    return monotone_metric(code, ideal, target) and (not aggregation.majority or all(
        len(e.grades) % 2 == 1 for e in entries
        if e.position is not None and e.position < m and None in e.grades))


def monotone_metric(code: str, ideal: str, target: Scale) -> bool:
    """Whether the metric never falls as a position's v_i rises (module docstring, path 1);
    with a binary vote, only where every open position has an odd number of slots."""
    if code in ("ndcg", "ndcg_d"):
        return ideal == "max"
    if code in ("err", "err_018"):
        return target.lo >= 0
    return code in _MONOTONE


def ndcg_ratio_range(dcg_low, dcg_high, ideal_low, ideal_high):
    """Path 3 for nDCG with the ``local`` ideal on non-negative gains: DCG(low fill) over
    IDCG(high fill) .. DCG(high fill) over IDCG(low fill), at most 1 (DCG ≤ its local
    ideal, by rearrangement). Arrays or floats; returns (lower, upper)."""
    dcg_low, dcg_high, ideal_low, ideal_high = (
        np.asarray(x, dtype=np.float64) for x in (dcg_low, dcg_high, ideal_low, ideal_high))
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(ideal_high > 0, dcg_low / ideal_high, 0.0)
        upper = np.where(ideal_low > 0, np.minimum(1.0, dcg_high / ideal_low), 1.0)
    return lower, np.maximum(upper, lower)


def _distinct_outcomes(entries, units, m, uses_pool, scale, aggregation, evaluate):
    """Path 2: (lower, upper), or None when there are more than MAX_COMPLETIONS."""
    # Per unit: its distinct outcomes, each with one completion of its entries' grades.
    per_unit: list[dict[tuple, list[tuple[int, list[Any]]]]] = []
    for members in units:
        holes = [(i, s) for i in members for s, g in enumerate(entries[i].grades) if g is None]
        if len(scale.grades) ** len(holes) > MAX_UNIT_COMPLETIONS:
            return None
        per_unit.append(_unit_outcomes(entries, members, holes, m, uses_pool, scale,
                                       aggregation))
    # A document at no position ≤ m is read only through its pooled value, by functions of
    # the pool's values as a multiset (R_pool, the top grade, the ideal ranking): documents
    # with the same possible outcomes are interchangeable, so only how many of them take
    # each outcome matters (C(g + s - 1, s - 1) choices for g documents, not s^g).
    choices: list[list[list[tuple[int, list[Any]]]]] = []
    interchangeable: dict[frozenset, list[dict]] = {}
    for members, outcomes in zip(units, per_unit, strict=True):
        if any(entries[i].position is not None and entries[i].position < m for i in members):
            choices.append(list(outcomes.values()))
        else:
            interchangeable.setdefault(frozenset(outcomes), []).append(outcomes)
    for keys, group in interchangeable.items():
        ordered = sorted(keys, key=repr)
        choices.append([
            [entry for outcomes, key in zip(group, multiset, strict=True)
             for entry in outcomes[key]]
            for multiset in itertools.combinations_with_replacement(ordered, len(group))
        ] if math.comb(len(group) + len(ordered) - 1, len(group)) <= MAX_COMPLETIONS else [])
        if not choices[-1]:
            return None
    if math.prod(len(options) for options in choices) > MAX_COMPLETIONS:
        return None
    completions = []
    for picks in itertools.product(*choices):
        completed = list(entries)
        for pick in picks:
            for i, grades in pick:
                completed[i] = entries[i]._replace(grades=grades)
        completions.append(completed)
    values = evaluate(completions)
    values = values[~np.isnan(values)]
    if not values.size:
        return None, None
    return float(values.min()), float(values.max())


def _unit_outcomes(entries, members, holes, m, uses_pool, scale, aggregation):
    """Every completion of one unit's holes, at once, reduced to one completion per
    distinct outcome: what the metric reads of the unit, i.e. each of its positions'
    aggregated value up to m and, for the pool metrics, the document's pooled value."""
    grid = np.array(list(itertools.product(scale.grades, repeat=len(holes))), dtype=np.float64)
    completed: dict[int, np.ndarray] = {}
    column = 0
    for i in members:
        grades = entries[i].grades
        row = np.array([np.nan if g is None else float(g) for g in grades], dtype=np.float64)
        block = np.tile(row, (len(grid), 1))
        nulls = [s for s, g in enumerate(grades) if g is None]
        block[:, nulls] = grid[:, column:column + len(nulls)]
        column += len(nulls)
        completed[i] = block
    columns = [aggregation.aggregate(completed[i]) for i in members
               if entries[i].position is not None and entries[i].position < m]
    if uses_pool:
        columns.append(aggregation.aggregate(np.concatenate([completed[i] for i in members],
                                                            axis=1)))
    keys = np.stack(columns, axis=1)
    keys = np.where(np.isnan(keys), np.inf, keys)  # NaN never equals itself in np.unique
    _, first = np.unique(keys, axis=0, return_index=True)
    return {
        tuple(None if math.isinf(v) else float(v) for v in keys[index]):
            [(i, [int(g) for g in completed[i][index]]) for i in members]
        for index in sorted(first.tolist())
    }


def _aggregate(aggregation: Aggregation, grades: list[Any]) -> float | None:
    if not grades:
        return None
    row = np.array([[np.nan if g is None else float(g) for g in grades]])
    return _float(aggregation.aggregate(row)[0])


def _sound_range(code, gain, ideal, k, target, aggregation, entries, units, m,
                 low_grade, high_grade) -> KeywordBounds:
    """Path 3: bounds that contain the exact ones (module docstring)."""
    if code in _UNIT_RANGE:
        return KeywordBounds(0.0, 1.0, False)
    if code in ("recall", "f_score"):
        # A position's v_i is its own slots' vote, a pooled document's value all of the
        # document's slots': they agree only when each document up to m is one result and
        # has no other pool entry. Then relevant positions ≤ relevant pool documents, so
        # recall ≤ 1; otherwise #relevant positions ≤ m over R_pool ≥ 1 is all we know.
        docs = [e.doc for e in entries]
        top = [e.doc for e in entries if e.position is not None and e.position < m]
        consistent = all(docs.count(doc) == 1 for doc in top)
        return KeywordBounds(0.0, 1.0 if consistent else float(max(m, 1)), False)
    if code in ("ndcg", "ndcg_d") and target.lo >= 0:
        gains = kernels.gains_function(gain)
        low, high = (_fill(entries, units, g) for g in (low_grade, high_grade))

        def position_gains(completed):
            values = [_aggregate(aggregation, e.grades) for e in completed
                      if e.position is not None and e.position < m]
            return gains(np.array([[np.nan if v is None else v for v in values]]))

        def ideal_dcg(completed) -> float:
            if ideal == "local":
                return float(kernels.ideal_dcg_local(position_gains(completed))[0])
            pooled = [_aggregate(aggregation, g) for g in _pooled_grades(completed).values()]
            values = np.array([[np.nan if v is None else v for v in pooled]])
            return float(kernels.ideal_dcg_pool(values, k, gain)[0])

        dcg_low = float(kernels.dcg(position_gains(low))[0])
        dcg_high = float(kernels.dcg(position_gains(high))[0])
        ideal_low, ideal_high = ideal_dcg(low), ideal_dcg(high)
        if ideal == "local":
            lower, upper = ndcg_ratio_range(dcg_low, dcg_high, ideal_low, ideal_high)
            return KeywordBounds(float(lower), float(upper), False)
        lower = dcg_low / ideal_high if ideal_high > 0 else 0.0
        # IDCG(pool) > 0 means some pooled value is > 0, so ≥ 1/slots (a mean of
        # integers), and that value's gain sits at position 1 of the ideal ranking.
        slots = max((len(g) for g in _pooled_grades(entries).values()), default=1)
        floor = float(gains(np.array([[1.0 / max(slots, 1)]]))[0, 0])
        upper = dcg_high / (ideal_low if ideal_low > 0 else floor)
        return KeywordBounds(lower, max(upper, lower), False)
    return KeywordBounds(-math.inf, math.inf, False)


def _pooled_grades(entries: list[_Entry]) -> dict[Hashable, list[Any]]:
    by_doc: dict[Hashable, list[Any]] = {}
    for e in entries:
        by_doc.setdefault(e.doc, []).extend(e.grades)
    return by_doc


def _float(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
