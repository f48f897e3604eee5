"""Reads of behaviour data: the online metrics of an evaluation's keywords, from a
source's stored sums (behaviour.core.online does the arithmetic).

An evaluation's keyword matches the source's rows of its normalised text. A window, given
as days (`start_on`, `end_on`, both included), keeps the rows of those days; a CSV
source's rows have no day and are kept only when no window is asked for. Also the access
function of clicks graders.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import date

import numpy as np
from django.db.models import QuerySet, Sum
from django.http import Http404

from behaviour.core.online import (
    KeywordBehaviour,
    OnlineMetrics,
    behaviour_total,
    mean_over_keywords,
    online_metrics,
)
from behaviour.models import BehaviourCount, BehaviourSearches, BehaviourSource, ClickGrader
from evaluations.models import Evaluation
from judges.access import judge_get_for_user
from searchtweak.models import User


@dataclass(frozen=True)
class KeywordOnline:
    keyword_id: int
    text: str
    tags: list[str]
    metrics: OnlineMetrics | None
    """None: the source has no row of this keyword in the window."""


@dataclass(frozen=True)
class GroupOnline:
    """A set of keywords' figures two ways: each keyword counting once (`mean_*`, as the
    offline metrics average keywords) and pooled, each search counting once."""

    keyword_count: int
    mean_ctr_at_k: float | None
    mean_first_click_rr: float | None
    mean_abandonment: float | None
    pooled: OnlineMetrics | None


@dataclass(frozen=True)
class EvaluationOnline:
    k: int
    keywords: list[KeywordOnline]
    overall: GroupOnline
    segments: dict[str, GroupOnline]
    """Per tag of the keywords, in tag order."""


def rows_in_window(rows: QuerySet, start_on: date | None, end_on: date | None) -> QuerySet:
    """The sums rows of days from start_on to end_on (both included, either open); a
    row without a day (a CSV's) only when no window is asked for."""
    if start_on is None and end_on is None:
        return rows
    rows = rows.filter(day__isnull=False)
    if start_on is not None:
        rows = rows.filter(day__gte=start_on)
    if end_on is not None:
        rows = rows.filter(day__lte=end_on)
    return rows


KEYWORD_CHUNK = 500
"""Keywords per IN list: SQLite refuses a statement with more bound variables than its
limit, and an evaluation may have 100,000 keywords."""


def keyword_behaviours(*, source: BehaviourSource, keywords: list[str],
                       start_on: date | None = None, end_on: date | None = None
                       ) -> dict[str, KeywordBehaviour]:
    """{normalised keyword: its behaviour summed over the window}, for those it has."""
    by_position: dict[str, dict[int, tuple]] = defaultdict(dict)
    searches: dict[str, int] = defaultdict(int)
    firsts: dict[str, list[int]] = defaultdict(list)
    for start in range(0, len(keywords), KEYWORD_CHUNK):
        chunk = keywords[start:start + KEYWORD_CHUNK]
        counts = rows_in_window(BehaviourCount.objects.filter(source=source, keyword__in=chunk),
                           start_on, end_on)
        for row in counts.values("keyword", "position").annotate(
                shown=Sum("impressions"), clicked=Sum("clicks"),
                dwell_sum=Sum("dwell_seconds_sum"), dwell_count=Sum("dwell_count")).order_by():
            by_position[row["keyword"]][row["position"]] = (
                row["shown"], row["clicked"], row["dwell_sum"], row["dwell_count"])
        found = rows_in_window(BehaviourSearches.objects.filter(source=source, keyword__in=chunk),
                          start_on, end_on)
        for keyword, search_count, first_clicks in found.values_list(
                "keyword", "search_count", "first_clicks"):
            searches[keyword] += search_count
            total = firsts[keyword]
            total.extend([0] * (len(first_clicks) - len(total)))
            for index, count in enumerate(first_clicks):
                total[index] += count
    behaviours = {}
    for keyword, positions in by_position.items():
        depth = max(max(positions), len(firsts[keyword]))
        impressions, clicks, first = np.zeros(depth), np.zeros(depth), np.zeros(depth)
        first[:len(firsts[keyword])] = firsts[keyword]
        dwell_sum, dwell_count = 0.0, 0
        for position, (shown, clicked, d_sum, d_count) in positions.items():
            impressions[position - 1], clicks[position - 1] = shown, clicked
            dwell_sum += d_sum
            dwell_count += d_count
        behaviours[keyword] = KeywordBehaviour(
            impressions=impressions, clicks=clicks, first_clicks=first,
            searches=searches[keyword], dwell_seconds_sum=dwell_sum, dwell_count=dwell_count)
    return behaviours


def _group(members: list[tuple[KeywordOnline, KeywordBehaviour | None]], k: int
           ) -> GroupOnline:
    present = [metrics for row, _b in members if (metrics := row.metrics) is not None]
    total = behaviour_total(b for _row, b in members if b is not None)
    return GroupOnline(
        keyword_count=len(members),
        mean_ctr_at_k=mean_over_keywords(m.ctr_at_k for m in present),
        mean_first_click_rr=mean_over_keywords(m.first_click_rr for m in present),
        mean_abandonment=mean_over_keywords(m.abandonment for m in present),
        pooled=online_metrics(total, k=k) if total is not None else None)


def evaluation_online_metrics(*, evaluation: Evaluation, source: BehaviourSource,
                              k: int = 10, start_on: date | None = None,
                              end_on: date | None = None) -> EvaluationOnline:
    """The online metrics of each of the evaluation's keywords, of them all, and of each
    tag's keywords (a segment), from the source's sums in the window: three queries
    per KEYWORD_CHUNK keywords."""
    keywords = list(evaluation.keywords.order_by("position").values_list(
        "id", "text", "normalized_text", "tags"))
    behaviours = keyword_behaviours(source=source, keywords=[kw[2] for kw in keywords],
                                    start_on=start_on, end_on=end_on)
    members = []
    for keyword_id, text, normalized, tags in keywords:
        found = behaviours.get(normalized)
        members.append((KeywordOnline(
            keyword_id=keyword_id, text=text, tags=list(tags or []),
            metrics=online_metrics(found, k=k) if found is not None else None), found))
    segments = sorted({tag for row, _b in members for tag in row.tags})
    return EvaluationOnline(
        k=k, keywords=[row for row, _b in members], overall=_group(members, k),
        segments={tag: _group([m for m in members if tag in m[0].tags], k)
                  for tag in segments})



def pair_position_counts(*, source: BehaviourSource, keywords: list[str],
                         start_on: date | None = None, end_on: date | None = None
                         ) -> list[tuple[str, str, int, int, int]]:
    """(normalised keyword, doc id, position, impressions, clicks) summed over the window's
    days, for every document the source shows for these keywords: what a click model
    reads (it learns each position's bias from all of them, not only the graded ones)."""
    rows = []
    for start in range(0, len(keywords), KEYWORD_CHUNK):
        chunk = keywords[start:start + KEYWORD_CHUNK]
        counts = rows_in_window(BehaviourCount.objects.filter(source=source, keyword__in=chunk),
                           start_on, end_on)
        rows.extend(counts.values_list("keyword", "doc_id", "position").annotate(
            shown=Sum("impressions"), clicked=Sum("clicks")).order_by(
            "keyword", "doc_id", "position"))
    return rows


def click_grader_get_for_user(*, user: User, judge_id: int, minimum_role: str) -> ClickGrader:
    """A clicks grader by its judge's id (judge, team and source loaded), through the judges'
    access function: 404 for a judge that is missing, another team's or not a clicks
    grader; 403 below `minimum_role`."""
    judge = judge_get_for_user(user=user, judge_id=judge_id, minimum_role=minimum_role)
    grader = ClickGrader.objects.select_related("source").filter(judge=judge).first()
    if grader is None:
        raise Http404("No such clicks grader.")
    grader.judge = judge
    return grader
