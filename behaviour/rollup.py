"""The rollup a source's online figures are read from (BehaviourKeywordDay,
docs/decisions/0028): per (keyword, day) and per keyword over the whole log, its sums
(BehaviourCount, BehaviourSearches) added up over documents, position by position up to
ROLLUP_DEPTH.

It is rebuilt from the sums, never patched with a batch's increments, so it is their
function whatever wrote them: the importers rebuild a new source whole, the collector the
keywords and days a batch touched, each in the transaction that wrote the sums; the
migration that brought the rollup in rebuilt every source. A day row is dropped and made
again; a keyword's whole row is then the sum of its day rows (or, for a CSV, which has no
days, of its sums themselves).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from django.db.models import Case, F, Max, Model, Sum, Value, When

from behaviour.models import ROLLUP_DEPTH

CHUNK = 500
"""Keywords per IN list (SQLite's bound-variable limit)."""
SUMMED = ("searches", "dwell_seconds_sum", "dwell_count",
          *(f"{name}_{position}" for position in range(1, ROLLUP_DEPTH + 1)
            for name in ("impressions", "clicks", "first_clicks")))
DEEPEST = ("count_depth", "first_click_depth")


@dataclass(frozen=True)
class RollupModels:
    """The three models the rollup reads and writes: the app's, or a migration's."""

    count: type[Model]
    searches: type[Model]
    keyword_day: type[Model]


def _app_models() -> RollupModels:
    from behaviour.models import BehaviourCount, BehaviourKeywordDay, BehaviourSearches
    return RollupModels(BehaviourCount, BehaviourSearches, BehaviourKeywordDay)


def _source_keywords(found: RollupModels, source_id: int) -> list[str]:
    keywords = set(found.count.objects.filter(source_id=source_id).values_list(
        "keyword", flat=True).distinct())
    keywords.update(found.searches.objects.filter(source_id=source_id).values_list(
        "keyword", flat=True).distinct())
    return sorted(keywords)


def _empty() -> dict:
    return dict.fromkeys(SUMMED + DEEPEST, 0) | {"dwell_seconds_sum": 0.0}


def _groups(found: RollupModels, source_id: int, chunk: list[str],
            days: list[date] | None) -> dict[tuple[str, date | None], dict]:
    """{(keyword, day): the rollup's fields} from the sums of these keywords (and days)."""
    counts = found.count.objects.filter(source_id=source_id, keyword__in=chunk)
    searches = found.searches.objects.filter(source_id=source_id, keyword__in=chunk)
    if days is not None:
        counts, searches = counts.filter(day__in=days), searches.filter(day__in=days)
    per_position = {
        f"{name}_{position}": Sum(Case(When(position=position, then=F(name)),
                                       default=Value(0)))
        for position in range(1, ROLLUP_DEPTH + 1) for name in ("impressions", "clicks")}
    groups: dict[tuple[str, date | None], dict] = {}
    for row in counts.values("keyword", "day").annotate(
            count_depth=Max("position"), dwell_seconds_sum=Sum("dwell_seconds_sum"),
            dwell_count=Sum("dwell_count"), **per_position).order_by():
        fields = groups.setdefault((row["keyword"], row["day"]), _empty())
        fields["dwell_seconds_sum"] = float(row["dwell_seconds_sum"] or 0.0)
        for name in ("count_depth", "dwell_count", *per_position):
            # PostgreSQL sums bigints as numeric: whole numbers, as ints.
            fields[name] = int(row[name] or 0)
    for keyword, day, search_count, first_clicks in searches.values_list(
            "keyword", "day", "search_count", "first_clicks"):
        fields = groups.setdefault((keyword, day), _empty())
        fields["searches"] = search_count
        fields["first_click_depth"] = len(first_clicks)
        for index, count in enumerate(first_clicks[:ROLLUP_DEPTH], start=1):
            fields[f"first_clicks_{index}"] = count
    return groups


def keyword_days_rebuild(*, source_id: int, keywords: Iterable[str] | None = None,
                         days: Iterable[date] | None = None,
                         models: RollupModels | None = None) -> None:
    """Make the rollup of a source's keywords (default: all of its keywords) on some days
    (default: every day) again from its sums, and those keywords' whole rows. Run it in
    the transaction that changed the sums."""
    found = models or _app_models()
    wanted = sorted(set(keywords)) if keywords is not None else _source_keywords(
        found, source_id)
    on_days = sorted(set(days)) if days is not None else None
    rows = found.keyword_day.objects
    for start in range(0, len(wanted), CHUNK):
        chunk = wanted[start:start + CHUNK]
        stale = rows.filter(source_id=source_id, keyword__in=chunk)
        if on_days is not None:
            stale = stale.filter(whole=True) | stale.filter(whole=False, day__in=on_days)
        stale.delete()
        groups = _groups(found, source_id, chunk, on_days)
        rows.bulk_create(
            [found.keyword_day(source_id=source_id, keyword=keyword, day=day, whole=False,
                               **fields)
             for (keyword, day), fields in groups.items() if day is not None],
            batch_size=CHUNK)
        wholes = {keyword: fields for (keyword, day), fields in groups.items()
                  if day is None}
        for row in rows.filter(source_id=source_id, keyword__in=chunk, whole=False).values(
                "keyword").annotate(**{name: Sum(name) for name in SUMMED},
                                    **{name: Max(name) for name in DEEPEST}).order_by():
            fields = wholes.setdefault(row["keyword"], _empty())
            for name in SUMMED:
                fields[name] += (float if name == "dwell_seconds_sum" else int)(row[name] or 0)
            for name in DEEPEST:
                fields[name] = max(fields[name], int(row[name] or 0))
        rows.bulk_create(
            [found.keyword_day(source_id=source_id, keyword=keyword, day=None, whole=True,
                               **fields) for keyword, fields in wholes.items()],
            batch_size=CHUNK)
