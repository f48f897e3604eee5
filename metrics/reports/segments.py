"""Segments on the pages a lead reads (docs/METRICS.md, "Weighted means and segments"): which
keywords a page counts (every keyword, or those carrying a tag) and whether their means
are weighted by traffic; an evaluation's stored segment means read once
(metrics.selectors.metric_segment_means) and laid out as a table of metric x segment; a
paired comparison's means weighted (the compare page).

The choice travels in the query string (`?segment=tail&weighted=1`), so a page can be
shared as it is seen.
"""

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from evaluations.models import EvaluationMetric, Keyword
from metrics.queries import Tagged
from metrics.selectors import SegmentMean, metric_label, metric_segment_means
from metrics_engine import statistics
from metrics_engine.segment_sums import EVERY
from metrics_engine.weighted import HEAD, TAIL, TORSO, weighted_mean

# The traffic segments read best in their own order, before every other tag.
_TRAFFIC_ORDER = {HEAD: 0, TORSO: 1, TAIL: 2}


@dataclass(frozen=True)
class SegmentChoice:
    """The keywords a page counts: `segment` "" for every keyword, else a tag; `weighted`:
    means weighted by the keywords' traffic (their weights)."""

    segment: str = EVERY
    weighted: bool = False

    @property
    def everything_plain(self) -> bool:
        """Every keyword, unweighted: the numbers the pages showed before segments."""
        return self.segment == EVERY and not self.weighted

    @property
    def label(self) -> str:
        keywords = f"keywords tagged {self.segment}" if self.segment else "every keyword"
        return f"{keywords}, weighted by traffic" if self.weighted else keywords

    @property
    def query(self) -> dict[str, str]:
        """The query-string parameters that choose it ("" leaves one out)."""
        return {"segment": self.segment, "weighted": "1" if self.weighted else ""}


EVERY_KEYWORD = SegmentChoice()


def tag_order(tags: Sequence[str]) -> list[str]:
    """Tags as the pages list them: head, torso, tail first, then the others by name."""
    return sorted(set(tags), key=lambda tag: (_TRAFFIC_ORDER.get(tag, 3), tag))


@dataclass(frozen=True)
class SegmentMeans:
    """Every stored segment mean of some configured metrics, by (metric id, segment,
    weighted), and the tags they cover (every tag some keyword with a stored value
    carries), in tag_order."""

    means: dict[tuple[int, str, bool], SegmentMean]
    tags: list[str]

    def get(self, metric_id: int, choice: SegmentChoice) -> SegmentMean | None:
        return self.means.get((metric_id, choice.segment, choice.weighted))


def segment_means_of(configs: Sequence[EvaluationMetric]) -> SegmentMeans:
    """The segment means of these configs: one query once their sums are stored."""
    rows = metric_segment_means(metric_ids=[config.pk for config in configs])
    return SegmentMeans(
        means={(row.metric_id, row.segment, row.weighted): row for row in rows},
        tags=tag_order([row.segment for row in rows if row.segment != EVERY]))


def segment_problem(*, means: SegmentMeans, segment: str, keywords: QuerySet[Keyword],
                    owner: str = "this evaluation") -> str | None:
    """Why `segment` cannot be shown, or None when it can: every keyword, a tag the stored
    means cover, or one that some of `keywords` (the page's: an evaluation's, a model's)
    carry before any value is stored (one query, asked only then). `owner` names whose
    keywords they are in the message."""
    if segment == EVERY or segment in means.tags:
        return None
    if keywords.filter(Tagged(segment)).exists():
        return None
    return f"No keyword of {owner} carries the tag “{segment}”: there is no such segment."


@dataclass(frozen=True)
class SegmentCell:
    """One metric over one segment: the plain and the traffic-weighted mean."""

    segment: str
    plain: SegmentMean | None
    weighted: SegmentMean | None


@dataclass(frozen=True)
class SegmentRow:
    config: EvaluationMetric
    label: str
    cells: list[SegmentCell]


@dataclass(frozen=True)
class SegmentTable:
    """Rows: the metrics; columns: every keyword ("") then each tag."""

    segments: list[str]
    rows: list[SegmentRow]


def segment_table(*, configs: Sequence[EvaluationMetric], means: SegmentMeans) -> SegmentTable:
    segments = [EVERY, *means.tags]
    return SegmentTable(segments=segments, rows=[
        SegmentRow(config=config, label=metric_label(config), cells=[
            SegmentCell(segment, means.means.get((config.pk, segment, False)),
                        means.means.get((config.pk, segment, True)))
            for segment in segments])
        for config in configs])


def weighted_paired(result: statistics.PairedComparison, both: list[str],
                    values_a: dict[str, float | None], values_b: dict[str, float | None],
                    weights: dict[str, int]) -> tuple[statistics.PairedComparison, int]:
    """`result` with its means and mean delta weighted by `weights` over the keywords with a
    value on both sides (`both`; weight 0 leaves a keyword out: docs/METRICS.md,
    "Weighted means and segments"), and Σ weight over them. Its counts and tests stay
    those of every keyword alike."""
    counted = [t for t in both if weights[t] > 0]
    keyword_weights = [weights[t] for t in counted]
    return dataclasses.replace(
        result,
        mean_a=weighted_mean([values_a[t] for t in counted], keyword_weights),
        mean_b=weighted_mean([values_b[t] for t in counted], keyword_weights),
        mean_delta=weighted_mean([values_b[t] - values_a[t] for t in counted],
                                 keyword_weights),
    ), sum(keyword_weights)
