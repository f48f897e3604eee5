"""Both entry points of the engine over one implementation.

``evaluate_batch_many`` is the implementation: it validates the configuration once, walks
the keywords in cache-sized blocks (a loop over blocks of thousands of keywords, never over
keywords or positions), turns each block into slot codes once (validating it), aggregates
them once per metric scale (stages 0 and 1, aggregate.py) and runs each metric's batch
function from its registry entry (stage 2, over kernels.py) on them, sharing what several
metrics need (relevance, counts, gains); no metric is named here.
``evaluate_batch`` is that for one metric; ``evaluate_keyword`` turns one keyword's lists
into a 1-keyword array and calls it, so the application and the benchmarks compute every
number the same way.

Every kernel computes a keyword from its own row alone, in a fixed order (kernels.py), so
blocks are independent and run on a small thread pool (block_threads.py): numpy releases
the GIL inside its loops, which is where a block spends its time. A keyword's value depends
neither on the block it falls in nor on the thread count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import metrics_engine.kernels as kernels  # not via metrics_engine, which re-exports this module
from metrics_engine.aggregate import Aggregation, Derive, SlotCodes, shared_aggregation, slot_codes
from metrics_engine.block_threads import run_blocks
from metrics_engine.errors import MetricInputError
from metrics_engine.pool import GradeList, Pool, build_pool
from metrics_engine.registry import (
    BatchInputs,
    MetricSpec,
    Params,
    metric_scale,
    metric_spec,
    needs_pool,
    resolve_params,
    validate_k,
)
from metrics_engine.scales import Scale, is_integer, resolve_scale
from metrics_engine.transform import resolve_transformer, validate_transformers

_BLOCK_ELEMENTS = 1 << 18
"""Grades per block: the block's temporaries stay in the L2/L3 cache."""

MetricRequest = tuple[str, int] | tuple[str, int, Mapping[str, Any] | None]
"""(metric code, k) or (metric code, k, params)."""


@dataclass(frozen=True)
class _Plan:
    spec: MetricSpec
    k: int
    params: Params
    aggregation: Aggregation
    uses_pool: bool


def evaluate_batch(
    metric: str,
    grades: np.ndarray,
    *,
    k: int,
    scale: str | Scale,
    params: Mapping[str, Any] | None = None,
    transformers: Mapping[str, Any] | None = None,
    pool: Pool | None = None,
    present: np.ndarray | None = None,
) -> np.ndarray:
    """Per-keyword values of one metric; NaN = null.

    ``grades``: float array (keywords, positions, slots) on the evaluation's ``scale``,
    NaN for an empty slot or a missing position. Only positions ≤ k are read, and
    validated: a grade there that is not an integer of the scale raises MetricInputError.
    ``pool`` (see Pool) is required by ``recall``, ``f_score``, ``best`` and
    ``ideal: pool``; other metrics ignore it. ``present`` (keywords, positions), True at
    each position the search returned (positions_present), tells a missing position from
    an ungraded one where that changes a value: nDCG's local ideal on a scale with
    negative gains. Without it every position of the array counts as returned.
    """
    return evaluate_batch_many(
        [(metric, k, params)], grades, scale=scale, transformers=transformers, pool=pool,
        present=present,
    )[0]


def positions_present(grades: np.ndarray, ungraded: np.ndarray) -> np.ndarray:
    """(keywords, positions): True where a position has a slot, graded or not."""
    return (~np.isnan(grades) | ungraded).any(axis=2)


def evaluate_batch_many(
    metrics: Sequence[MetricRequest],
    grades: np.ndarray,
    *,
    scale: str | Scale,
    transformers: Mapping[str, Any] | None = None,
    pool: Pool | None = None,
    present: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Several metrics over the same grades, sharing stages 0 and 1 per metric scale
    (``present`` as evaluate_batch's).

    Returns one float64 array (keywords,) per request, in order, NaN = null.
    """
    evaluation_scale = resolve_scale(scale)
    validate_transformers(transformers, evaluation_scale)
    aggregations: dict[Scale, Aggregation] = {}
    plans: list[_Plan] = []
    for request in metrics:
        code, k, params = (*request, None)[:3] if len(request) == 2 else request
        spec = metric_spec(code)
        resolved = resolve_params(params)
        target = metric_scale(spec, evaluation_scale)
        if target not in aggregations:
            transformer = resolve_transformer(evaluation_scale, target, transformers)
            aggregations[target] = shared_aggregation(evaluation_scale, target, transformer)
        plans.append(
            _Plan(spec, validate_k(k), resolved, aggregations[target], needs_pool(code, resolved))
        )
    grades = _grade_array(grades)
    keyword_count, position_count, slot_count = grades.shape
    if present is not None:
        present = np.asarray(present, dtype=bool)
        if present.shape != grades.shape[:2]:
            raise MetricInputError(
                "present", f"shape {present.shape} is not {grades.shape[:2]}")
    read_positions = min(max((plan.k for plan in plans), default=0), position_count)
    pool_plans = [plan for plan in plans if plan.uses_pool]
    if pool_plans and pool is None:
        raise MetricInputError("pool", f"metric {pool_plans[0].spec.code!r} needs the keyword pool")
    if pool_plans:
        assert pool is not None
        pool = Pool(_grade_array(pool.grades, "pool.grades"), pool.doc_index)
        pool.check(
            keyword_count, read_positions,
            need_positions=any(p.spec.zero_when_nothing_returned for p in plans),
        )
    results = [np.empty(keyword_count) for _ in plans]
    per_keyword = max(read_positions * slot_count, 1)
    if pool_plans:
        assert pool is not None
        per_keyword += pool.grades.shape[1] * pool.grades.shape[2]
    block_size = max(1, _BLOCK_ELEMENTS // per_keyword)

    def evaluate_block(start: int) -> None:
        stop = min(start + block_size, keyword_count)
        codes = slot_codes(grades[start:stop, :read_positions], evaluation_scale, "grades")
        scale_blocks: dict[Aggregation, _ScaleBlock] = {}
        pool_codes: SlotCodes | None = None
        pooled: dict[Aggregation, np.ndarray] = {}
        for plan, result in zip(plans, results, strict=True):
            aggregation = plan.aggregation
            if aggregation not in scale_blocks:
                scale_blocks[aggregation] = _ScaleBlock(aggregation, codes)
            pool_values = None
            if plan.uses_pool:
                assert pool is not None
                if pool_codes is None:
                    pool_codes = slot_codes(pool.grades[start:stop], evaluation_scale,
                                            "pool.grades")
                if aggregation not in pooled:
                    pooled[aggregation] = aggregation.lookup(pool_codes)
                pool_values = pooled[aggregation]
            doc_index = None
            if plan.spec.zero_when_nothing_returned:
                assert pool is not None and pool.doc_index is not None
                doc_index = pool.doc_index[start:stop, : min(plan.k, read_positions)]
            result[start:stop] = _stage2(
                plan, scale_blocks[aggregation], pool_values, doc_index,
                None if present is None else present[start:stop])

    run_blocks(evaluate_block, range(0, keyword_count, block_size))
    return results


class _ScaleBlock:
    """One block's aggregated values on one metric scale and what its metrics share.

    ``positions(derive, m)`` is ``derive`` of the aggregated v_1..v_m, (keywords, m);
    ``count(derive, m)`` its sum per keyword. Each is computed once per block and m.
    """

    def __init__(self, aggregation: Aggregation, codes: SlotCodes) -> None:
        self.aggregation = aggregation
        self.keyword_count, self.position_count = codes.codes.shape[:2]
        self._codes = codes
        self._positions: dict[tuple[Derive | None, int], np.ndarray] = {}
        self._counts: dict[tuple[Derive, int], np.ndarray] = {}
        self._patterns: dict[int, np.ndarray] = {}

    def positions(self, derive: Derive | None, m: int) -> np.ndarray:
        key = (derive, m)
        if key not in self._positions:
            codes = self._codes
            if codes.combos is None and derive is not None:
                # No combination table: derive from the aggregated values, computed once.
                self._positions[key] = derive(self.positions(None, m))
            else:
                first = SlotCodes(
                    codes.codes[:, :m], None if codes.combos is None else codes.combos[:, :m]
                )
                self._positions[key] = self.aggregation.lookup(first, derive)
        return self._positions[key]

    def count(self, derive: Derive, m: int) -> np.ndarray:
        key = (derive, m)
        if key not in self._counts:
            self._counts[key] = kernels.row_sums(self.positions(derive, m))
        return self._counts[key]

    def of_relevance_pattern(
        self, kernel: Callable[[np.ndarray], np.ndarray], m: int
    ) -> np.ndarray:
        """``kernel(relevant)`` for a metric that depends on the relevance pattern alone
        (AP, RR): for short cutoffs, a lookup in the kernel's table of every pattern."""
        relevant = self.positions(kernels.relevant, m)
        if m > kernels.MAX_PATTERN_POSITIONS:
            return kernel(relevant)
        if m not in self._patterns:
            self._patterns[m] = kernels.relevance_patterns(relevant)
        return kernels.pattern_table(kernel, m).take(self._patterns[m])


def _stage2(
    plan: _Plan, block: _ScaleBlock, pool_values: np.ndarray | None, doc_index: np.ndarray | None,
    present: np.ndarray | None = None,
) -> np.ndarray:
    """One metric over a block's aggregated values; the all-null rule applied last.

    ``doc_index`` (keywords, m) is the pool index of each position's document, -1 where the
    search returned none; given for the zero_when_nothing_returned metrics, which tell
    m = 0 by it.
    """
    m = min(plan.k, block.position_count)
    out = plan.spec.batch(BatchInputs(
        block=block, m=m, k=plan.k, params=plan.params,
        top_grade=plan.aggregation.target.hi, pool_values=pool_values, doc_index=doc_index,
        present=None if present is None else present[:, :m],
    ))
    all_null = block.count(kernels.judged, m) == 0.0
    if plan.spec.zero_when_nothing_returned:
        # m = 0: the search missed the pool, so the kernel's value (0, or null under the
        # metric's own null condition) stands; only m > 0 with nothing graded is null.
        assert doc_index is not None
        all_null &= kernels.returned_any(doc_index)
    return np.where(all_null, np.nan, out)


def _grade_array(grades: Any, field_name: str = "grades") -> np.ndarray:
    array = np.asarray(grades)
    if array.dtype.kind in "iu":
        array = array.astype(np.float64)
    if array.dtype.kind != "f":
        raise MetricInputError(field_name, f"must be a float array, not {array.dtype}")
    if array.ndim != 3:
        raise MetricInputError(
            field_name, f"must be a 3-D array (keywords, positions, slots), not {array.ndim}-D"
        )
    return array


def evaluate_keyword(
    metric: str,
    results: Sequence[GradeList],
    *,
    k: int,
    scale: str | Scale,
    params: Mapping[str, Any] | None = None,
    transformers: Mapping[str, Any] | None = None,
    pool: Sequence[tuple[Hashable, GradeList]] | None = None,
    doc_ids: Sequence[Hashable] | None = None,
) -> float | None:
    """One keyword's value of a metric, or None for null.

    ``results``: the slot grades of positions 1..n in order (None = empty slot; lists may
    differ in length). ``doc_ids``: the document at each position (defaults to a distinct
    document per position); duplicates are kept and share one pool entry. ``pool``: other
    judged documents of the keyword as (doc, grades); the results are always in the pool.
    """
    values = evaluate_keywords(
        metric, [results], k=k, scale=scale, params=params, transformers=transformers,
        pools=None if pool is None else [pool],
        doc_ids=None if doc_ids is None else [doc_ids],
    )
    return None if math.isnan(values[0]) else float(values[0])


def evaluate_keywords(
    metric: str,
    keywords: Sequence[Sequence[GradeList]],
    *,
    k: int,
    scale: str | Scale,
    params: Mapping[str, Any] | None = None,
    transformers: Mapping[str, Any] | None = None,
    pools: Sequence[Sequence[tuple[Hashable, GradeList]]] | None = None,
    doc_ids: Sequence[Sequence[Hashable]] | None = None,
) -> np.ndarray:
    """``evaluate_keyword`` for many keywords given as lists; NaN = null per keyword."""
    evaluation_scale = resolve_scale(scale)
    resolved_params = resolve_params(params)
    metric_spec(metric)
    grades = grade_lists_to_array(keywords, evaluation_scale)
    pool = None
    if needs_pool(metric, resolved_params):
        pool = build_pool(
            [
                (
                    list(zip(_doc_ids(doc_ids, index, len(results)), results, strict=True)),
                    [] if pools is None else _pool_entries(pools[index], evaluation_scale),
                )
                for index, results in enumerate(keywords)
            ]
        )
    return evaluate_batch(
        metric, grades, k=k, scale=evaluation_scale, params=params,
        transformers=transformers, pool=pool,
    )


def _doc_ids(
    doc_ids: Sequence[Sequence[Hashable]] | None, keyword: int, result_count: int
) -> Sequence[Hashable]:
    if doc_ids is None:
        return [("position", position) for position in range(result_count)]
    if len(doc_ids[keyword]) != result_count:
        raise MetricInputError("doc_ids", "needs one document id per result")
    return doc_ids[keyword]


def _pool_entries(
    entries: Sequence[tuple[Hashable, GradeList]], scale: Scale
) -> list[tuple[Hashable, GradeList]]:
    for _doc, grades in entries:
        _check_grade_list(grades, scale, "pool.grades")
    return list(entries)


def grade_lists_to_array(keywords: Sequence[Sequence[GradeList]], scale: Scale) -> np.ndarray:
    """Per-keyword lists of slot-grade lists → the (keywords, positions, slots) float array.

    Grade *types* are checked here ("3" and true are not grades); range and integrality
    are checked by the vectorised path like every batch input.
    """
    position_count = max((len(results) for results in keywords), default=0)
    slot_count = max(
        (len(grades) for results in keywords for grades in results), default=0
    )
    array = np.full((len(keywords), position_count, max(slot_count, 1)), np.nan)
    for keyword, results in enumerate(keywords):
        for position, grades in enumerate(results):
            _check_grade_list(grades, scale, "grades")
            for slot, grade in enumerate(grades):
                if grade is not None:
                    array[keyword, position, slot] = grade
    return array


def _check_grade_list(grades: Any, scale: Scale, field_name: str) -> None:
    if not isinstance(grades, list | tuple):
        raise MetricInputError(field_name, f"{_show(grades)} is not a list of grades")
    for grade in grades:
        if grade is None:
            continue
        if not is_integer(grade):
            raise MetricInputError(field_name, f"{_show(grade)} is not an integer")
        if not scale.lo <= grade <= scale.hi:
            raise MetricInputError(
                field_name, f"{_show(grade)} is outside {scale.describe()}"
            )


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def mean_over_keywords(values: Iterable[float | None] | np.ndarray) -> tuple[float | None, int]:
    """The evaluation's value: mean over keywords whose value is not null, and their count.

    Null (None or NaN) keywords are left out, not counted as 0; all null → (None, 0).
    The one way a mean over keywords is computed (stored means, a from-scratch recompute,
    comparisons, leaderboards): the sum is `math.fsum`, correctly rounded whatever order
    the values come in, then divided by the count, so every path that averages the same
    values stores the same float, bit for bit. A plain running sum depends on the order of
    the rows, which the database does not fix.
    """
    array = np.array(
        [np.nan if value is None else value for value in values]
        if not isinstance(values, np.ndarray)
        else values,
        dtype=np.float64,
    )
    present = array[~np.isnan(array)]
    if present.size == 0:
        return None, 0
    return math.fsum(present.tolist()) / present.size, int(present.size)
