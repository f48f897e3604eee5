"""Stages 0 and 1 of docs/METRICS.md, vectorised: grade arrays → one value per snapshot.

A grade block is a float array (..., slots) on the evaluation's scale, NaN for an empty
slot. Each grade becomes an integer *code* (grade - lo; the scale's size L for NaN), the
transformer is applied through a table indexed by code (stage 0), then the slots are
aggregated (stage 1): a binary majority vote (tie or no grade → NaN) or the arithmetic
mean of the non-null transformed grades (no grade → NaN).

For the usual 1 or 3 slots the aggregate of every possible combination of codes is
tabulated once by that same generic function (``_aggregate_codes``) and each snapshot then
costs one table lookup; larger slot counts (pools) use the generic function directly.

A block is validated and turned into codes once (``slot_codes``) for all the metric scales
that need it. Any per-snapshot function of the aggregated value (relevant or not, gain,
...) is tabulated the same way: ``Aggregation.lookup(codes, derive)`` applies ``derive`` to
the table once and each snapshot then costs one lookup, with the same result as applying
``derive`` to the aggregated values element by element.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from metrics_engine.errors import MetricInputError
from metrics_engine.scales import BINARY, Scale
from metrics_engine.transform import Transformer

_MAX_COMBO_TABLE = 4096
"""Largest (L + 1) ** slots tabulated; 3 slots of the detail scale need 1331 entries."""


Derive = Callable[[np.ndarray], np.ndarray]
"""An element-wise function of aggregated values (NaN = null), e.g. "is relevant"."""


@dataclass(frozen=True)
class SlotCodes:
    """One validated grade block as codes, shared by every metric scale of its evaluation.

    ``codes`` (..., slots): grade - lo, or the scale's size for an empty slot. ``combos``
    (...): each snapshot's combination of codes as an index into the combination tables,
    or None when there are too many combinations to tabulate (or no slot at all).
    """

    codes: np.ndarray
    combos: np.ndarray | None


def slot_codes(block: np.ndarray, scale: Scale, field_name: str = "grades") -> SlotCodes:
    """Validate ``block`` (..., slots) on ``scale`` (see grade_codes) and encode its slots."""
    codes = grade_codes(block, scale, field_name)
    slot_count = codes.shape[-1]
    radix = scale.hi - scale.lo + 2
    if slot_count == 0 or radix**slot_count > _MAX_COMBO_TABLE:
        return SlotCodes(codes, None)
    combos = codes[..., 0].copy()
    for slot in range(1, slot_count):
        combos *= radix
        combos += codes[..., slot]
    return SlotCodes(codes, combos)


@dataclass(frozen=True, eq=False)  # identity: one per metric scale and evaluation
class Aggregation:
    """Stage 0 (``transformer``: source grade → target grade) then stage 1 on ``target``."""

    source: Scale
    target: Scale
    transformer: Transformer
    _tables: dict[tuple[int, Derive | None], np.ndarray] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )
    # Blocks may be evaluated on several threads; a table is built once, under the lock.
    _tables_lock: threading.RLock = field(
        default_factory=threading.RLock, compare=False, hash=False, repr=False
    )

    @property
    def majority(self) -> bool:
        """Binary targets vote; graded, detail and admin scales average."""
        return self.target.code == BINARY and self.target.lo == 0 and self.target.hi == 1

    @property
    def null_code(self) -> int:
        return self.source.hi - self.source.lo + 1

    def aggregate(self, block: np.ndarray, field_name: str = "grades") -> np.ndarray:
        """Validate ``block`` (..., slots) and return the aggregated values (...,) as float64."""
        return self.lookup(slot_codes(block, self.source, field_name))

    def lookup(self, codes: SlotCodes, derive: Derive | None = None) -> np.ndarray:
        """The aggregated values (...,) of ``codes`` (NaN = null), or ``derive`` of them.

        With a combination table ``derive`` runs once on the table, not on every snapshot.
        """
        if codes.combos is None:
            if codes.codes.shape[-1] == 0:
                values = np.full(codes.codes.shape[:-1], np.nan)
            else:
                values = self._aggregate_codes(codes.codes)
            return values if derive is None else derive(values)
        return self._table(codes.codes.shape[-1], derive).take(codes.combos)

    def _table(self, slot_count: int, derive: Derive | None) -> np.ndarray:
        key = (slot_count, derive)
        table = self._tables.get(key)
        if table is None:
            with self._tables_lock:
                table = self._tables.get(key)
                if table is None:
                    if derive is None:
                        radix = self.null_code + 1
                        combos = np.indices((radix,) * slot_count).reshape(slot_count, -1).T
                        table = self._aggregate_codes(combos)
                    else:
                        table = derive(self._table(slot_count, None))
                    table.flags.writeable = False
                    self._tables[key] = table
        return table

    def _aggregate_codes(self, codes: np.ndarray) -> np.ndarray:
        """The definition of stages 0 and 1 on codes (..., slots); NaN = null."""
        targets = np.array(
            [self.transformer[grade] for grade in self.source.grades] + [0], dtype=np.int64
        )
        graded = np.ones(self.null_code + 1, dtype=np.int64)
        graded[-1] = 0
        grade_count = graded[codes].sum(axis=-1)
        if self.majority:
            votes = np.where(targets == 1, 1, -1) * graded
            vote_sum = votes[codes].sum(axis=-1)
            return np.where(vote_sum > 0, 1.0, np.where(vote_sum < 0, 0.0, np.nan))
        total = targets[codes].sum(axis=-1).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(grade_count > 0, total / grade_count, np.nan)


def shared_aggregation(source: Scale, target: Scale, transformer: Transformer) -> Aggregation:
    """The process's one Aggregation of these scales and mapping, so that its combination
    tables are built once, not per call: a recompute after one grade evaluates one keyword,
    and rebuilding the tables was a large part of that. (The tables' derive functions are
    module-level or cached, so the tables per Aggregation stay few.)"""
    return _shared(source, target, tuple(sorted(transformer.items())))


@lru_cache(maxsize=256)
def _shared(source: Scale, target: Scale, mapping: tuple[tuple[int, int], ...]) -> Aggregation:
    return Aggregation(source, target, dict(mapping))


def grade_codes(block: np.ndarray, scale: Scale, field_name: str = "grades") -> np.ndarray:
    """Integer codes of a float grade block: grade - lo, or L = hi - lo + 1 for NaN.

    Raises MetricInputError naming ``field_name`` for a grade outside the scale or one that
    is not an integer (the first offender is quoted).
    """
    null_code = scale.hi - scale.lo + 1
    if block.size == 0:
        return np.zeros(block.shape, dtype=np.int16)
    # fmin/fmax reductions skip NaN, so one pass each bounds every real grade.
    seen_lo = np.fmin.reduce(block, axis=None)
    seen_hi = np.fmax.reduce(block, axis=None)
    if seen_lo < scale.lo or seen_hi > scale.hi:
        raise _first_invalid(block, scale, field_name)
    clipped = np.fmin(block, scale.hi + 1)  # NaN → hi + 1; nothing else can reach it now
    code_type = np.int16 if null_code < 2**15 else np.int32
    codes = clipped.astype(code_type)
    if not np.array_equal(codes, clipped):
        raise _first_invalid(block, scale, field_name)
    if scale.lo:
        codes -= code_type(scale.lo)
    return codes


def _first_invalid(block: np.ndarray, scale: Scale, field_name: str) -> MetricInputError:
    grades = block[~np.isnan(block)]
    outside = (grades < scale.lo) | (grades > scale.hi)
    fractional = grades != np.floor(grades)
    if fractional.any():
        value = grades[np.argmax(fractional)]
        return MetricInputError(field_name, f"{format_grade(value)} is not an integer")
    value = grades[np.argmax(outside)]
    return MetricInputError(field_name, f"{format_grade(value)} is outside {scale.describe()}")


def format_grade(value: float) -> str:
    """4.0 → "4", 1.5 → "1.5": quote a grade the way the user wrote it."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
