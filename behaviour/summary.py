"""A set of keywords' online metrics over a window, in a few aggregated queries whatever
the number of keywords: what the dashboard, a query set's page and the API show beside
the offline metrics. They are read from the rollup (behaviour.rollup, docs/decisions/0028):
one statement over a row per keyword for the whole log, the last 7 or 30 days of it
(docs/decisions/0033) or a window holding every day of the log (after a look at the log's
first and last day), one over a row per keyword and day for another window; on PostgreSQL
each after its planner settings. Where the keywords' sums go deeper than the rollup's
positions (ROLLUP_DEPTH), the figures are added up from the sums themselves (four
statements, their time growing with the count rows: bench/online_panel.py).

The keywords come as a subquery of their normalised texts (an evaluation's, a query set
version's), never as a Python list. A window is whole days (`start_on`, `end_on`, both
included), as behaviour.selectors reads them: a CSV source's rows, which have no day, are
kept only when no window is asked for.

Each figure is the pooled one (each search and each impression counts once, the keywords
weighed by their traffic, as a search team reads its CTR), plus the mean over keywords of
CTR@k (each keyword counts once, as the offline metrics average keywords).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
from django.db.models import (
    Avg,
    Case,
    Count,
    F,
    FloatField,
    Max,
    Min,
    Q,
    QuerySet,
    Sum,
    When,
)
from django.db.models.functions import Cast, NullIf

from behaviour.core.online import KeywordBehaviour, OnlineMetrics, online_metrics
from behaviour.models import (
    LAST_DAYS,
    ROLLUP_DEPTH,
    BehaviourCount,
    BehaviourKeywordDay,
    BehaviourKeywordLastDays,
    BehaviourSearches,
    BehaviourSource,
)
from behaviour.rollup import (
    DEEPEST,
    INDEX_READ,
    SUMMED,
    first_clicks_by_position,
    planner_settings,
    window_sums,
)
from behaviour.selectors import rows_in_window


@dataclass(frozen=True)
class OnlineSummary:
    source: BehaviourSource
    k: int
    start_on: date | None
    end_on: date | None
    keywords_with_behaviour: int
    impressions: int
    clicks: int
    pooled: OnlineMetrics | None
    """None: no row of these keywords in the window."""
    mean_ctr_at_k: float | None

    def ctr_by_position(self, depth: int = 10) -> list[tuple[int, float | None]]:
        """(position, CTR) for positions 1..depth."""
        found = self.pooled.ctr_by_position if self.pooled else []
        return [(index + 1, found[index] if index < len(found) else None)
                for index in range(depth)]


def online_summary(*, source: BehaviourSource, keyword_texts: QuerySet, k: int = 10,
                   start_on: date | None = None, end_on: date | None = None
                   ) -> OnlineSummary:
    """The online metrics of the keywords whose normalised texts `keyword_texts` (a
    values("normalized_text") queryset) yields, from the source's sums in the window:
    the same figures whether read from the rollup or from the sums (tested)."""
    return (summary_from_rollup(source=source, keyword_texts=keyword_texts, k=k,
                                start_on=start_on, end_on=end_on)
            or summary_from_sums(source=source, keyword_texts=keyword_texts, k=k,
                                 start_on=start_on, end_on=end_on))


def _top(name: str, k: int):
    """The sum of a rollup row's `name` at positions 1..k."""
    total = F(f"{name}_1")
    for position in range(2, min(k, ROLLUP_DEPTH) + 1):
        total = total + F(f"{name}_{position}")
    return total


def _ratio(clicked, shown):
    return Cast(clicked, FloatField()) / NullIf(Cast(shown, FloatField()), 0.0)


def _covers_the_log(source: BehaviourSource, start_on: date | None, end_on: date | None
                    ) -> bool:
    """Whether the window holds every day of the source's rollup, so that its whole rows
    (each the sum of a keyword's day rows) are the window's sums. Never for a CSV, whose
    whole rows are dayless sums that no window holds (one index probe at each end)."""
    if source.kind == BehaviourSource.Kind.CSV:
        return False
    days = BehaviourKeywordDay.objects.filter(source=source, whole=False).aggregate(
        first=Min("day"), last=Max("day"))
    if days["first"] is None:
        return False
    return ((start_on is None or start_on <= days["first"])
            and (end_on is None or days["last"] <= end_on))


def _row_per_keyword_sums(rows: QuerySet, k: int) -> dict:
    """The pooled sums of rows holding a keyword each (whole or last-days rows), the
    keywords with count rows and the mean of their CTR@k (each row's own)."""
    # The aliases are not the fields' names: an aggregate may not refer to another.
    with planner_settings(**INDEX_READ):
        found = rows.aggregate(
            **{f"all_{name}": Sum(name) for name in SUMMED},
            **{f"all_{name}": Max(name) for name in DEEPEST},
            keywords=Count("id", filter=Q(count_depth__gt=0)), rows=Count("id"),
            mean=Avg(_ratio(_top("clicks", k), _top("impressions", k))))
    return {name.removeprefix("all_"): value for name, value in found.items()}


def _last_days_sums(source: BehaviourSource, keyword_texts: QuerySet, k: int,
                    start_on: date | None, end_on: date | None) -> dict | None:
    """The sums from the last-days rows, when the window is one of the presets (7 or 30
    days) ending on the day they end on; None otherwise. The source's day is checked in
    the statement that reads them (a task may be making them again meanwhile); a
    window where none of these keywords has a row reads the day rows instead, which
    then cost nothing."""
    if start_on is None or end_on is None or source.kind == BehaviourSource.Kind.CSV:
        return None
    days = (end_on - start_on).days + 1
    if days not in LAST_DAYS:
        return None
    sums = _row_per_keyword_sums(BehaviourKeywordLastDays.objects.filter(
        source=source, source__last_days_on=end_on, days=days,
        keyword__in=keyword_texts), k)
    return sums if sums["rows"] else None


def summary_from_rollup(*, source: BehaviourSource, keyword_texts: QuerySet, k: int = 10,
                        start_on: date | None = None, end_on: date | None = None
                        ) -> OnlineSummary | None:
    """The summary from the rollup; None where the keywords' sums in the window go deeper
    than ROLLUP_DEPTH (positions or first clicks), which the rollup does not hold one by
    one. The whole log, a window holding every day of it, or the last 7 or 30 days of
    it, is one statement over a row per keyword; a shorter window one over its day rows
    (behaviour.rollup.window_sums), after one query for the log's days."""
    sums = _last_days_sums(source, keyword_texts, k, start_on, end_on)
    if sums is None and ((start_on is None and end_on is None)
                         or _covers_the_log(source, start_on, end_on)):
        sums = _row_per_keyword_sums(BehaviourKeywordDay.objects.filter(
            source=source, keyword__in=keyword_texts, whole=True), k)
    if sums is None:
        sums = window_sums(source_id=source.pk, keyword_texts=keyword_texts, k=k,
                           start_on=start_on, end_on=end_on)
    count_depth, first_depth = sums["count_depth"] or 0, sums["first_click_depth"] or 0
    if max(count_depth, first_depth) > ROLLUP_DEPTH:
        return None
    if not count_depth:
        return OnlineSummary(source=source, k=k, start_on=start_on, end_on=end_on,
                             keywords_with_behaviour=0, impressions=0, clicks=0, pooled=None,
                             mean_ctr_at_k=None)
    depth = max(count_depth, first_depth)

    def by_position(name: str) -> np.ndarray:
        return np.array([float(sums[f"{name}_{position}"] or 0)
                         for position in range(1, depth + 1)])

    impressions, clicks = by_position("impressions"), by_position("clicks")
    searches = int(sums["searches"] or 0)
    pooled = online_metrics(KeywordBehaviour(
        impressions=impressions, clicks=clicks,
        first_clicks=by_position("first_clicks") if searches else np.zeros(depth),
        searches=searches, dwell_seconds_sum=float(sums["dwell_seconds_sum"] or 0.0),
        dwell_count=int(sums["dwell_count"] or 0)), k=k)
    return OnlineSummary(
        source=source, k=k, start_on=start_on, end_on=end_on,
        keywords_with_behaviour=sums["keywords"], impressions=int(impressions.sum()),
        clicks=int(clicks.sum()), pooled=pooled, mean_ctr_at_k=sums["mean"])


def summary_from_sums(*, source: BehaviourSource, keyword_texts: QuerySet, k: int = 10,
                      start_on: date | None = None, end_on: date | None = None
                      ) -> OnlineSummary:
    """The summary added up from the sums themselves, per position however deep (four
    statements, each over every count row of the keywords in the window)."""
    counts = rows_in_window(BehaviourCount.objects.filter(source=source,
                                                     keyword__in=keyword_texts),
                       start_on, end_on)
    by_position = {row["position"]: row for row in counts.values("position").annotate(
        shown=Sum("impressions"), clicked=Sum("clicks"), dwell_sum=Sum("dwell_seconds_sum"),
        dwell_count=Sum("dwell_count")).order_by()}
    searches = rows_in_window(BehaviourSearches.objects.filter(source=source,
                                                          keyword__in=keyword_texts),
                         start_on, end_on)
    search_count = searches.aggregate(total=Sum("search_count"))["total"] or 0
    firsts = first_clicks_by_position(searches) if search_count else {}
    keyword_count, mean_ctr = 0, None
    if by_position:
        # One pass over the keywords' rows gives both: the keywords with behaviour (the
        # groups) and the mean of their CTR@k.
        per_keyword = counts.values("keyword").annotate(
            shown=Sum(Case(When(position__lte=k, then=F("impressions")))),
            clicked=Sum(Case(When(position__lte=k, then=F("clicks"))))).annotate(
            ctr=Cast("clicked", FloatField()) / NullIf(Cast("shown", FloatField()), 0.0)
        ).aggregate(mean=Avg("ctr"), keywords=Count("keyword"))
        keyword_count, mean_ctr = per_keyword["keywords"], per_keyword["mean"]
    pooled = None
    if by_position:
        depth = max(max(by_position), max(firsts, default=0))
        impressions, clicks, first = np.zeros(depth), np.zeros(depth), np.zeros(depth)
        for position, row in by_position.items():
            impressions[position - 1], clicks[position - 1] = row["shown"], row["clicked"]
        for position, total in firsts.items():
            first[position - 1] = total
        pooled = online_metrics(KeywordBehaviour(
            impressions=impressions, clicks=clicks, first_clicks=first, searches=search_count,
            dwell_seconds_sum=sum(row["dwell_sum"] or 0.0 for row in by_position.values()),
            dwell_count=sum(row["dwell_count"] or 0 for row in by_position.values())), k=k)
    return OnlineSummary(
        source=source, k=k, start_on=start_on, end_on=end_on,
        keywords_with_behaviour=keyword_count,
        impressions=int(sum(row["shown"] for row in by_position.values())),
        clicks=int(sum(row["clicked"] for row in by_position.values())),
        pooled=pooled, mean_ctr_at_k=mean_ctr)

