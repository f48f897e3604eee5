"""A set of keywords' online metrics over a window, in a few aggregated queries whatever
the number of keywords: what the dashboard, a query set's page and the API show beside
the offline metrics (an evaluation of 100,000 keywords costs the same four statements;
their time grows with the count rows they add up: bench/online_panel.py).

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
from django.db import connection
from django.db.models import Avg, Case, Count, F, FloatField, QuerySet, Sum, When
from django.db.models.functions import Cast, NullIf

from behaviour.core.online import KeywordBehaviour, OnlineMetrics, online_metrics
from behaviour.models import BehaviourCount, BehaviourSearches, BehaviourSource
from behaviour.selectors import _windowed


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


def _first_clicks(searches: QuerySet) -> dict[int, int]:
    """{position: searches whose first click was there}, summed in the database over the
    JSON lists (one statement; the lists never come to Python)."""
    inner, params = searches.values("id").query.sql_with_params()
    table = BehaviourSearches._meta.db_table
    if connection.vendor == "postgresql":
        statement = (f"SELECT e.position, SUM(e.value::bigint) FROM {table} s, "
                     "jsonb_array_elements_text(s.first_clicks) WITH ORDINALITY "
                     f"AS e(value, position) WHERE s.id IN ({inner}) GROUP BY e.position")
    else:
        statement = (f"SELECT e.key + 1, SUM(e.value) FROM {table} s, json_each(s.first_clicks)"
                     f" AS e WHERE s.id IN ({inner}) GROUP BY e.key")
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return {int(position): int(total or 0) for position, total in cursor.fetchall()}


def online_summary(*, source: BehaviourSource, keyword_texts: QuerySet, k: int = 10,
                   start_on: date | None = None, end_on: date | None = None
                   ) -> OnlineSummary:
    """The online metrics of the keywords whose normalised texts `keyword_texts` (a
    values("normalized_text") queryset) yields, from the source's sums in the window."""
    counts = _windowed(BehaviourCount.objects.filter(source=source,
                                                     keyword__in=keyword_texts),
                       start_on, end_on)
    by_position = {row["position"]: row for row in counts.values("position").annotate(
        shown=Sum("impressions"), clicked=Sum("clicks"), dwell_sum=Sum("dwell_seconds_sum"),
        dwell_count=Sum("dwell_count")).order_by()}
    searches = _windowed(BehaviourSearches.objects.filter(source=source,
                                                          keyword__in=keyword_texts),
                         start_on, end_on)
    search_count = searches.aggregate(total=Sum("search_count"))["total"] or 0
    firsts = _first_clicks(searches) if search_count else {}
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

