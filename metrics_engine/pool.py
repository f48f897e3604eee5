"""The keyword's pool (docs/METRICS.md, "The keyword's pool") as arrays for the batch path."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from metrics_engine.errors import MetricInputError

GradeList = Sequence[float | int | None]
"""The grades of one snapshot or one pooled document; None = empty slot."""


@dataclass(frozen=True)
class Pool:
    """Every judged document of each keyword, for ``recall``, ``best`` and ``ideal: pool``.

    ``grades``: float array (keywords, documents, grades) on the evaluation's scale, NaN
    padded: all the grades each document received for the keyword (in this evaluation and
    in the team's other evaluations on the same scale), *including the results' own*.
    Stages 0 and 1 aggregate them per document exactly like a snapshot's slots.

    ``doc_index``: int array (keywords, positions): the document at each result position
    as an index into ``grades``' document axis, -1 for a missing position. ``best`` needs
    it (it asks *which* document sits at a position), and so does ``recall``: both tell by
    it a search that returned nothing (m = 0, value 0) from one not graded yet (null).
    """

    grades: np.ndarray
    doc_index: np.ndarray | None = None

    def check(self, keyword_count: int, position_count: int, *, need_positions: bool) -> None:
        """Raise MetricInputError on ``pool`` when the arrays do not fit the grade array."""
        if self.grades.ndim != 3 or self.grades.shape[0] != keyword_count:
            raise MetricInputError(
                "pool.grades", f"must have shape ({keyword_count}, documents, grades)"
            )
        if need_positions and self.doc_index is None:
            raise MetricInputError(
                "pool.doc_index", "recall and best need each position's document"
            )
        if self.doc_index is not None:
            if self.doc_index.ndim != 2 or self.doc_index.shape[0] != keyword_count:
                raise MetricInputError(
                    "pool.doc_index", f"must have shape ({keyword_count}, positions)"
                )
            if self.doc_index.shape[1] < position_count:
                raise MetricInputError("pool.doc_index", "has fewer positions than grades")
            if not np.issubdtype(self.doc_index.dtype, np.integer):
                raise MetricInputError("pool.doc_index", "must be an integer array")
            if self.doc_index.size and self.doc_index.max() >= self.grades.shape[1]:
                raise MetricInputError("pool.doc_index", "points past the last pool document")


def build_pool(
    keywords: Sequence[
        tuple[Sequence[tuple[Hashable, GradeList]], Sequence[tuple[Hashable, GradeList]]]
    ],
) -> Pool:
    """Build a Pool from ``(results, other_judged)`` per keyword, each a list of (doc, grades).

    Documents are merged by id in order of first appearance (results first); a document's
    pooled grades are the concatenation of every grade list given for it, so a duplicate
    result or a document judged elsewhere adds its grades to the same pool entry.
    """
    merged: list[dict[Hashable, list[float]]] = []
    positions: list[list[int]] = []
    for results, others in keywords:
        documents: dict[Hashable, list[float]] = {}
        indexes: list[int] = []
        index_of: dict[Hashable, int] = {}
        for doc, grades in results:
            slot = documents.setdefault(doc, [])
            slot.extend(np.nan if grade is None else float(grade) for grade in grades)
            indexes.append(index_of.setdefault(doc, len(index_of)))
        for doc, grades in others:
            slot = documents.setdefault(doc, [])
            slot.extend(np.nan if grade is None else float(grade) for grade in grades)
        merged.append(documents)
        positions.append(indexes)
    keyword_count = len(merged)
    document_count = max((len(documents) for documents in merged), default=0)
    grade_count = max(
        (len(grades) for documents in merged for grades in documents.values()), default=0
    )
    position_count = max((len(indexes) for indexes in positions), default=0)
    pool_grades = np.full((keyword_count, document_count, grade_count), np.nan)
    doc_index = np.full((keyword_count, position_count), -1, dtype=np.int64)
    for keyword, documents in enumerate(merged):
        for document, grades in enumerate(documents.values()):
            pool_grades[keyword, document, : len(grades)] = grades
        doc_index[keyword, : len(positions[keyword])] = positions[keyword]
    return Pool(pool_grades, doc_index)
