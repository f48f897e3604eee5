"""Bounds under missing grades for many keywords at once: the application's path.

``bounds_batch`` takes the recompute's (keywords, positions, slots) grade array and a mask
of its ungraded slots (NaN alone cannot tell an ungraded slot from a missing position) and
returns each keyword's bounds, every number through ``evaluate_batch`` on completed arrays,
so they are the numbers ``keyword_bounds`` gives for the same keyword:

- a keyword with no ungraded slot up to k: its value, exact;
- a metric that moves one way with each grade (bounds.monotone_metric): two fills of every
  keyword at once, exact;
- a binary vote over an odd number of slots (AP, P, RR, ...): each open position can only
  end 0 or 1, whichever its fills give, so the completions that matter are the 2^u choices
  of its u undecided positions; keywords with 2^u ≤ ``max_completions`` are enumerated
  together, exact;
- nDCG with the ``local`` ideal: the sound ratio range of bounds.ndcg_ratio_range, vectorised,
  labelled inexact;
- anything else: ``keyword_bounds`` per keyword (exact up to its own cap, else labelled).

A keyword's bounds depend on its own grades alone, never on the keywords computed with it,
so an incremental run and a from-scratch recompute store the same numbers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

import metrics_engine.kernels as kernels
from metrics_engine.aggregate import Aggregation, shared_aggregation
from metrics_engine.batch import evaluate_batch, evaluate_batch_many, positions_present
from metrics_engine.bounds import keyword_bounds, monotone_metric, ndcg_ratio_range
from metrics_engine.errors import MetricInputError
from metrics_engine.registry import (
    metric_scale,
    metric_spec,
    needs_pool,
    resolve_params,
    validate_k,
)
from metrics_engine.scales import Scale, resolve_scale
from metrics_engine.transform import resolve_transformer

MAX_BATCH_COMPLETIONS = 64
"""Most completions the batch path enumerates for one keyword from slot outcomes."""
MAX_VOTE_COMPLETIONS = 1024
"""Most completions of a binary vote's undecided positions per keyword (built with array
operations alone, so many more fit in the same time)."""
_ROWS_PER_CHUNK = 1 << 16
"""Completed keyword rows evaluated together (memory, not results: rows are independent)."""


class BatchBounds(NamedTuple):
    """Per keyword: lower, upper (NaN = null) and whether they are exact."""

    lower: np.ndarray
    upper: np.ndarray
    exact: np.ndarray


def bounds_batch(
    metric: str,
    grades: np.ndarray,
    ungraded: np.ndarray,
    *,
    k: int,
    scale: str | Scale,
    params: Mapping[str, Any] | None = None,
    transformers: Mapping[str, Any] | None = None,
    values: np.ndarray | None = None,
    max_completions: int = MAX_BATCH_COMPLETIONS,
    max_vote_completions: int = MAX_VOTE_COMPLETIONS,
) -> BatchBounds:
    """Bounds of a metric that reads no pool, per keyword of ``grades`` (as
    ``evaluate_batch``'s), with ``ungraded`` True at each slot that exists and has no
    grade. ``values``, when given, are the keywords' values already computed."""
    evaluation_scale = resolve_scale(scale)
    spec = metric_spec(metric)
    resolved = resolve_params(params)
    k = validate_k(k)
    if needs_pool(metric, resolved):
        raise MetricInputError("metric", f"{metric} reads the pool: use keyword_bounds")
    grades = np.asarray(grades, dtype=np.float64)
    ungraded = np.asarray(ungraded, dtype=bool)
    if ungraded.shape != grades.shape:
        raise MetricInputError("ungraded", f"shape {ungraded.shape} is not {grades.shape}")

    # Which positions the search returned, per keyword: completions fill holes, never
    # positions, so each completion of a keyword has the keyword's.
    present = positions_present(grades, ungraded)

    def evaluate(array: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The metric of each row of ``array``, a completion of keyword ``rows[i]``
        (``array`` is ``grades`` itself when ``rows`` is None)."""
        shown = present if rows is None else present[rows]
        return evaluate_batch(metric, array, k=k, scale=evaluation_scale, params=params,
                              transformers=transformers, present=shown[:, :array.shape[1]])

    if values is None:
        values = evaluate(grades)
    lower, upper = values.astype(np.float64), values.astype(np.float64)
    exact = np.ones(len(values), dtype=bool)
    # Only positions ≤ k are read: the rest of the array changes nothing.
    m = min(k, grades.shape[1])
    grades, ungraded = grades[:, :m], ungraded[:, :m]
    open_rows = np.nonzero(ungraded.any(axis=(1, 2)))[0]
    if not open_rows.size:
        return BatchBounds(lower, upper, exact)

    fills = _fills(metric, resolved, evaluation_scale, transformers)
    aggregation = fills.aggregation
    holes = ungraded[open_rows]
    low = np.where(holes, float(fills.low_grade), grades[open_rows])
    high = np.where(holes, float(fills.high_grade), grades[open_rows])
    # A vote over an even number of a position's slots can tie (a null position), which is
    # between neither fill: such keywords take the general paths below.
    can_tie = (_may_tie(grades[open_rows], holes) if aggregation.majority
               else np.zeros(len(open_rows), dtype=bool))
    left = np.arange(len(open_rows))  # rows of open_rows still without bounds

    if fills.monotone:
        sure = left[~can_tie]
        if sure.size:
            both = evaluate(np.concatenate([low[sure], high[sure]]),
                            np.concatenate([open_rows[sure], open_rows[sure]]))
            lower[open_rows[sure]] = both[:len(sure)]
            upper[open_rows[sure]] = both[len(sure):]
        left = left[can_tie]
        if not left.size:
            return BatchBounds(lower, upper, exact)
    elif aggregation.majority:
        votes = left[~can_tie]
        if votes.size:
            def evaluate_outcomes(outcomes: np.ndarray) -> np.ndarray:
                # Each position's vote already taken: one slot a position on the metric's
                # own scale, a third of the array and no stage 0 to redo per completion.
                return evaluate_batch(metric, outcomes[..., None], k=k,
                                      scale=aggregation.target, params=params)

            done = _two_outcomes(evaluate_outcomes, aggregation, low[votes], high[votes],
                                 holes[votes], max_vote_completions, lower, upper,
                                 open_rows[votes])
            left = np.sort(np.concatenate([left[can_tie], votes[~done]]))
    target = aggregation.target
    if left.size:
        done = _distinct_outcomes(evaluate, aggregation, evaluation_scale, low, holes,
                                  max_completions, left, lower, upper, open_rows)
        left = left[~done]
    if spec.code in ("ndcg", "ndcg_d") and resolved.ideal == "local" and target.lo >= 0:
        gains = kernels.gains_function(resolved.gain)
        low_gains = gains(aggregation.aggregate(low[left]))
        high_gains = gains(aggregation.aggregate(high[left]))
        rows = open_rows[left]
        lower[rows], upper[rows] = ndcg_ratio_range(
            kernels.dcg(low_gains), kernels.dcg(high_gains),
            kernels.ideal_dcg_local(low_gains), kernels.ideal_dcg_local(high_gains))
        exact[rows] = False
        return BatchBounds(lower, upper, exact)
    for index in left:
        row = open_rows[index]
        found = keyword_bounds(
            metric, _grade_lists(grades[row], ungraded[row]), k=k, scale=evaluation_scale,
            params=params, transformers=transformers,
        )
        lower[row] = np.nan if found.lower is None else found.lower
        upper[row] = np.nan if found.upper is None else found.upper
        exact[row] = found.exact
    return BatchBounds(lower, upper, exact)


class _Fills(NamedTuple):
    """How a metric's bounds fill open slots: the grades whose transformed values are the
    lowest and highest, and whether these two fills alone are its bounds (where no
    position's vote can tie: _may_tie)."""

    aggregation: Aggregation
    low_grade: int
    high_grade: int
    monotone: bool


def _fills(metric: str, resolved, evaluation_scale: Scale,
           transformers: Mapping[str, Any] | None) -> _Fills:
    spec = metric_spec(metric)
    target = metric_scale(spec, evaluation_scale)
    transformer = resolve_transformer(evaluation_scale, target, transformers)
    aggregation = shared_aggregation(evaluation_scale, target, transformer)
    monotone = monotone_metric(spec.code, resolved.ideal, target)
    return _Fills(aggregation,
                  min(evaluation_scale.grades, key=lambda grade: transformer[grade]),
                  max(evaluation_scale.grades, key=lambda grade: transformer[grade]),
                  monotone)


def _may_tie(grades: np.ndarray, ungraded: np.ndarray) -> np.ndarray:
    """Per keyword: whether a position with an open slot has an even number of slots (graded
    or open), so that a vote there may end tied. Strategies 1 and 3 never do; "1 → 3"
    (adaptive slots) does once a second slot opens."""
    slots = (~np.isnan(grades) | ungraded).sum(axis=2)
    return ((slots % 2 == 0) & ungraded.any(axis=2)).any(axis=1)


def bounds_batch_many(
    metrics: Sequence[tuple[str, int, Mapping[str, Any] | None]],
    grades: np.ndarray,
    ungraded: np.ndarray,
    *,
    scale: str | Scale,
    transformers: Mapping[str, Any] | None = None,
    values: Sequence[np.ndarray],
) -> list[BatchBounds]:
    """``bounds_batch`` of each (metric, k, params) over the same grades, in order, given
    each one's ``values``. The metrics whose bounds are two fills with the same grades are
    evaluated together, both fills in one ``evaluate_batch_many``: a recompute after one
    grade bounds one keyword, and there the calls' fixed cost is most of the time."""
    evaluation_scale = resolve_scale(scale)
    grades = np.asarray(grades, dtype=np.float64)
    ungraded = np.asarray(ungraded, dtype=bool)
    if ungraded.shape != grades.shape:
        raise MetricInputError("ungraded", f"shape {ungraded.shape} is not {grades.shape}")
    found: list[BatchBounds | None] = [None] * len(metrics)
    together: dict[tuple[int, int], list[int]] = {}
    # Where a vote may tie ("1 → 3" slots), each metric goes its own way (bounds_batch).
    ties = bool(_may_tie(grades, ungraded).any())
    for index, (metric, _, params) in enumerate(metrics):
        resolved = resolve_params(params)
        fills = None if needs_pool(metric, resolved) else _fills(
            metric, resolved, evaluation_scale, transformers)
        if fills is not None and fills.monotone and not ties:
            together.setdefault((fills.low_grade, fills.high_grade), []).append(index)
        else:
            found[index] = bounds_batch(metric, grades, ungraded, k=metrics[index][1],
                                        scale=evaluation_scale, params=params,
                                        transformers=transformers, values=values[index])
    open_rows = np.nonzero(ungraded.any(axis=(1, 2)))[0]
    for (low_grade, high_grade), members in together.items():
        holes = ungraded[open_rows]
        both = np.concatenate([np.where(holes, float(low_grade), grades[open_rows]),
                               np.where(holes, float(high_grade), grades[open_rows])])
        filled = evaluate_batch_many([metrics[index] for index in members], both,
                                     scale=evaluation_scale, transformers=transformers)
        for index, completed in zip(members, filled, strict=True):
            k = validate_k(metrics[index][1])
            lower = np.asarray(values[index], dtype=np.float64).copy()
            upper = lower.copy()
            # As bounds_batch: a keyword whose holes are all past k keeps its value.
            open_here = holes[:, :min(k, grades.shape[1])].any(axis=(1, 2))
            rows = open_rows[open_here]
            lower[rows] = completed[:len(open_rows)][open_here]
            upper[rows] = completed[len(open_rows):][open_here]
            found[index] = BatchBounds(lower, upper, np.ones(len(lower), dtype=bool))
    return [bounds for bounds in found if bounds is not None]


def _two_outcomes(evaluate_outcomes, aggregation, low, high, holes, max_completions,
                  lower, upper, open_rows) -> np.ndarray:
    """The binary vote's path (module docstring); which rows it bounded.
    ``evaluate_outcomes`` takes (rows, positions) of positions' aggregated values."""
    low, high = aggregation.aggregate(low), aggregation.aggregate(high)
    undecided = holes.any(axis=2) & (low != high)
    counts = undecided.sum(axis=1)
    limit = max(int(max_completions), 1).bit_length() - 1  # 2^limit ≤ max_completions
    done = counts <= limit
    positions = low.shape[1]
    for count in np.unique(counts[done]).tolist():
        rows = np.nonzero(counts == count)[0]
        width = 1 << count
        # The undecided positions of each row, first `count` columns.
        order = np.argsort(~undecided[rows], axis=1, kind="stable")[:, :count]
        choices = (np.arange(width)[:, None] >> np.arange(count)) & 1  # (width, count)
        chunk = max(_ROWS_PER_CHUNK // width, 1)
        for start in range(0, len(rows), chunk):
            part = rows[start:start + chunk]
            block = np.repeat(low[part][:, None], width, axis=1)  # (n, width, m)
            across = np.arange(len(part))[:, None]
            for column in range(count):
                picked = np.nonzero(choices[:, column])[0]
                position = order[start:start + len(part), column]
                block[across, picked[None, :], position[:, None]] = \
                    high[part, position][:, None]
            completed = evaluate_outcomes(block.reshape(len(part) * width, positions))
            completed = completed.reshape(len(part), width)
            known = ~np.isnan(completed)
            some = known.any(axis=1)
            with np.errstate(invalid="ignore"):
                lows = np.where(known, completed, np.inf).min(axis=1)
                highs = np.where(known, completed, -np.inf).max(axis=1)
            target_rows = open_rows[part]
            lower[target_rows] = np.where(some, lows, np.nan)
            upper[target_rows] = np.where(some, highs, np.nan)
    return done


def _distinct_outcomes(evaluate, aggregation, scale, low, holes, max_completions, left,
                       lower, upper, open_rows) -> np.ndarray:
    """Rows of ``left`` whose open positions have at most ``max_completions`` combinations
    of distinct aggregated outcomes: one completion per combination, all such keywords'
    completions evaluated together (the metric reads each position's outcome, not its
    slots). Which of ``left`` it bounded."""
    done = np.zeros(len(left), dtype=bool)
    open_positions = holes[left].any(axis=2)
    if aggregation.majority:
        # A vote's graded slots may decide a position: count open positions, with room.
        limit = max(max_completions, 1).bit_length() + 1
        candidates = np.nonzero(open_positions.sum(axis=1) <= limit)[0]
    else:
        # A mean of a position's slots, h of them open, each taking one of d distinct
        # transformed values, has at least h(d - 1) + 1 outcomes (the sumset bound |hA| ≥
        # h(|A| - 1) + 1): keywords whose product of these exceeds the cap cannot fit.
        distinct = len({aggregation.transformer[g] for g in scale.grades})
        least = holes[left].sum(axis=2) * (distinct - 1) + 1
        with np.errstate(divide="ignore"):
            fits = np.log(least).sum(axis=1) <= np.log(max(max_completions, 1)) + 1e-9
        candidates = np.nonzero(fits)[0]
    if not candidates.size:
        return done
    slot_count = low.shape[2]
    grid = np.array(list(itertools.product(scale.grades, repeat=slot_count)), dtype=np.float64)
    blocks: list[np.ndarray] = []
    owners: list[int] = []
    for index in candidates.tolist():
        row = left[index]
        options: list[list[np.ndarray]] = []
        for position in np.nonzero(open_positions[index])[0].tolist():
            filled = np.where(holes[row, position], grid, low[row, position])
            outcomes = aggregation.aggregate(filled)
            outcomes = np.where(np.isnan(outcomes), np.inf, outcomes)
            _, first = np.unique(outcomes, return_index=True)
            options.append([(position, filled[i]) for i in first.tolist()])
        if math.prod(len(o) for o in options) > max_completions:
            continue
        for picks in itertools.product(*options):
            completed = low[row].copy()
            for position, slots in picks:
                completed[position] = slots
            blocks.append(completed)
            owners.append(index)
        done[index] = True
    if not blocks:
        return done
    owner_rows = np.array(owners)
    values = evaluate(np.stack(blocks), open_rows[left[owner_rows]])
    starts = np.r_[0, np.nonzero(np.diff(owner_rows))[0] + 1]
    known = ~np.isnan(values)
    lows = np.minimum.reduceat(np.where(known, values, np.inf), starts)
    highs = np.maximum.reduceat(np.where(known, values, -np.inf), starts)
    some = np.logical_or.reduceat(known, starts)
    rows = open_rows[left[owner_rows[starts]]]
    lower[rows] = np.where(some, lows, np.nan)
    upper[rows] = np.where(some, highs, np.nan)
    return done


def _grade_lists(grades: np.ndarray, ungraded: np.ndarray) -> list[list[int | None]]:
    """One keyword's (positions, slots) arrays as the per-position lists keyword_bounds
    takes: the positions that have a slot, each slot a grade or None."""
    lists = []
    for position_grades, position_holes in zip(grades, ungraded, strict=True):
        slots = [None if hole else int(grade)
                 for grade, hole in zip(position_grades, position_holes, strict=True)
                 if hole or not np.isnan(grade)]
        if not slots:
            break
        lists.append(slots)
    return lists
