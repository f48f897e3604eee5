"""The per-keyword table of the evaluation dashboard: the keywords filtered (by status, by
a segment's tag), searched and sorted in SQL (by position, text or a metric's stored
values), paged by number or by a cursor along the sort's index, each row with every
metric's value and its snapshots. Seven queries whatever the number of keywords or the
page's depth.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass

from django.core.paginator import Paginator
from django.db.models import Exists, F, OuterRef, Q, QuerySet, Subquery

from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments.models import FeedbackSlot
from metrics.models import KeywordMetricValue
from metrics.queries import Tagged
from metrics.reports.keyword_snapshots import SnapshotDetail, snapshot_details
from metrics.selectors import KeywordRow, keyword_rows
from searchtweak.access import GradeVisibility

FILTERS = {"": "All", "failed": "Failed", "ungraded": "Not fully graded",
           "worst": "Worst first"}
KEYWORDS_PER_PAGE = 50


@dataclass(frozen=True)
class TableRow:
    row: KeywordRow
    snapshots: list[SnapshotDetail]


@dataclass(frozen=True)
class KeywordTable:
    page: "TablePage"
    rows: list[TableRow]


@dataclass(frozen=True)
class TablePage:
    """One page of the keyword table, reached by a page number (OFFSET) or by a cursor: the
    keyword the page starts after (Next) or ends before (Previous). `number` is the page's
    number when known (the links carry it; a bare cursor has none)."""

    object_list: list[Keyword]
    number: int | None
    count: int
    per_page: int
    more_before: bool
    more_after: bool

    # Methods, as Django's Page has them (templates call them the same way).
    def has_previous(self) -> bool:
        return self.more_before

    def has_next(self) -> bool:
        return self.more_after

    @property
    def num_pages(self) -> int:
        return max(1, math.ceil(self.count / self.per_page))

    @property
    def first_id(self) -> int | None:
        return self.object_list[0].pk if self.object_list else None

    @property
    def last_id(self) -> int | None:
        return self.object_list[-1].pk if self.object_list else None

    @property
    def previous_page_number(self) -> int | None:
        return self.number - 1 if self.number and self.number > 1 else None

    @property
    def next_page_number(self) -> int | None:
        return self.number + 1 if self.number else None


def _after(fields: list[tuple[str, bool]], key: tuple, *, nullable_first: bool) -> Q:
    """The rows strictly after `key` in the order of `fields` ((name, descending) pairs;
    the first may be null and then sorts last in both directions)."""
    (name, descending), rest = fields[0], fields[1:]
    value = key[0]
    if nullable_first and value is None:
        return Q(**{f"{name}__isnull": True}) & _after(rest, key[1:], nullable_first=False)
    beyond = Q(**{f"{name}__{'lt' if descending else 'gt'}": value})
    if rest:
        beyond |= Q(**{name: value}) & _after(rest, key[1:], nullable_first=False)
        beyond = _bounded(beyond, name, value, after=not descending)
    if nullable_first:
        beyond |= Q(**{f"{name}__isnull": True})
    return beyond


def _bounded(condition: Q, name: str, value, *, after: bool) -> Q:
    """`condition` with the bound it implies on its first field (name >= value, or <=):
    the same rows, but an index range can start at the key. Without it PostgreSQL reads
    "a > v OR (a = v AND b > k)" as a filter over the index from its start, so a deep page
    cost its depth (page 1,000: 50,000 rows read). (Nulls, which sort last, are added
    after by the caller where they follow the key.)"""
    return condition & Q(**{f"{name}__{'gte' if after else 'lte'}": value})


def _before(fields: list[tuple[str, bool]], key: tuple, *, nullable_first: bool) -> Q:
    """The rows strictly before `key` in the order of `fields` (see _after)."""
    (name, descending), rest = fields[0], fields[1:]
    value = key[0]
    if nullable_first and value is None:
        earlier = Q(**{f"{name}__isnull": False})
        if rest:
            earlier |= Q(**{f"{name}__isnull": True}) & _before(rest, key[1:],
                                                                nullable_first=False)
        return earlier
    earlier = Q(**{f"{name}__{'gt' if descending else 'lt'}": value})
    if rest:
        earlier |= Q(**{name: value}) & _before(rest, key[1:], nullable_first=False)
        earlier = _bounded(earlier, name, value, after=descending)
    return earlier


def _order(fields: list[tuple[str, bool]], *, reverse: bool, nullable_first: bool) -> list:
    """order_by() terms for `fields`, or for their reverse (the first's nulls then first)."""
    terms = []
    for i, (name, descending) in enumerate(fields):
        descending = descending != reverse
        nulls = {"nulls_first": True} if reverse else {"nulls_last": True}
        term = F(name).desc(**nulls) if descending else F(name).asc(**nulls)
        terms.append(term if nullable_first and i == 0 else
                     F(name).desc() if descending else F(name).asc())
    return terms


def _keyset_slice(rows: QuerySet, fields: list[tuple[str, bool]], key: tuple | None, *,
                  backward: bool, size: int, nullable_first: bool) -> list:
    """Up to `size` rows of `rows` after `key` (before it when `backward`, nearest first),
    in the order of `fields`: a range scan along an index in that order, whatever the
    page's depth."""
    if key is not None:
        rows = rows.filter((_before if backward else _after)(fields, key,
                                                             nullable_first=nullable_first))
    if size <= 0:
        return []
    return list(rows.order_by(*_order(fields, reverse=backward,
                                      nullable_first=nullable_first))[:size])


def keyword_queryset(*, evaluation: Evaluation, configs: list[EvaluationMetric],
                     sort: str = "position", descending: bool = False, show: str = "",
                     search: str = "", tag: str = "") -> QuerySet[Keyword]:
    """The evaluation's keywords filtered and ordered in SQL. `sort` is "position",
    "text" or "m<config id>"; "worst" keeps keywords with a value of the sort metric (the
    first metric when sorting by position or text) and puts the lowest first; `tag` keeps
    the keywords carrying it (a segment)."""
    keywords = Keyword.objects.filter(evaluation=evaluation)
    if tag:
        keywords = keywords.filter(Tagged(tag))
    if search:
        keywords = keywords.filter(Keyword.search_q(search))
    if show == "failed":
        keywords = keywords.filter(fetch_status=Keyword.FetchStatus.FAILED)
    elif show == "ungraded":
        keywords = keywords.filter(Exists(FeedbackSlot.objects.filter(
            keyword_id=OuterRef("pk"), grade__isnull=True)))
    metric_id = int(sort[1:]) if sort.startswith("m") else None
    if show == "worst" and metric_id is None and configs:
        metric_id, descending = configs[0].pk, False
    if metric_id is not None:
        keywords = keywords.annotate(sort_value=Subquery(KeywordMetricValue.objects.filter(
            keyword_id=OuterRef("pk"), metric_id=metric_id).values("value")[:1]))
        if show == "worst":
            keywords = keywords.filter(sort_value__isnull=False)
            descending = False
        fields, _ = keyword_sort_fields(configs=configs, sort=sort, descending=descending,
                                        show=show)
        return keywords.order_by(*_order(fields, reverse=False, nullable_first=True))
    # Position breaks ties of text so a keyset page (keyword_table) has one order to follow.
    fields, _ = keyword_sort_fields(configs=configs, sort=sort, descending=descending, show=show)
    return keywords.order_by(*_order(fields, reverse=False, nullable_first=False))


def _sort_metric(*, configs: list[EvaluationMetric], sort: str, descending: bool,
                 show: str) -> tuple[int | None, bool]:
    """The metric the table sorts by (None: position or text) and the direction: "worst"
    sorts by the first metric, lowest first, when no metric is chosen."""
    metric_id = int(sort[1:]) if sort.startswith("m") else None
    if show == "worst" and metric_id is None and configs:
        metric_id = configs[0].pk
    return metric_id, descending and show != "worst"


def keyword_sort_fields(*, configs: list[EvaluationMetric], sort: str, descending: bool,
                        show: str) -> tuple[list[tuple[str, bool]], bool]:
    """The (field, descending) pairs keyword_queryset orders by, and whether the first is
    the metric value that may be null (sorted last in both directions). Ties go in
    position order, reversed with the sort: a descending table is the ascending one read
    backwards but for the keywords without a value, still last."""
    metric_id, descending = _sort_metric(configs=configs, sort=sort, descending=descending,
                                         show=show)
    if metric_id is not None:
        return [("sort_value", descending), ("position", descending)], True
    if sort == "text":
        return [("normalized_text", descending), ("position", descending)], False
    return [("position", descending)], False


class MetricOrder:
    """The evaluation's keywords in the order of one metric's stored values, for the
    Paginator: the keywords with a value, walked along kmv_metric_value_kw_idx (backwards
    when descending) from the page's offset, ties in keyword order (reversed when
    descending); then, unless `values_only` ("worst"), those without a value in position
    order (reversed likewise), as keyword_sort_fields says. How many have a
    value is the metric's stored keyword count (MetricMean), so neither the count nor a
    page sorts every keyword.

    A `search` keeps the keywords whose text contains it, in the same walk: a frequent
    term fills a page from the first rows of the index, where sorting every match by its
    value cost a read of all of them (the count then reads the keywords' texts). A `tag`
    keeps a segment's keywords likewise; how many of them have a value is the segment's
    stored keyword count when the caller knows it (`tag_value_count`)."""

    def __init__(self, *, evaluation: Evaluation, config: EvaluationMetric,
                 descending: bool, values_only: bool, search: str = "", tag: str = "",
                 tag_value_count: int | None = None) -> None:
        self.evaluation, self.config = evaluation, config
        self.descending, self.values_only = descending, values_only
        self.search, self.tag = search, tag
        known = tag_value_count if tag else (config.keyword_count or 0)
        self._value_count: int | None = None if self.search else known
        self._count: int | None = None

    @property
    def value_count(self) -> int:
        if self._value_count is None:
            self._value_count = self._values().count()
        return self._value_count

    def count(self) -> int:
        if self._count is None:
            self._count = self.value_count if self.values_only else self._all().count()
        return self._count

    def _all(self) -> QuerySet[Keyword]:
        keywords = Keyword.objects.filter(evaluation=self.evaluation)
        if self.tag:
            keywords = keywords.filter(Tagged(self.tag))
        return keywords.filter(Keyword.search_q(self.search)) if self.search else keywords

    def _values(self) -> QuerySet[KeywordMetricValue]:
        values = KeywordMetricValue.objects.filter(metric_id=self.config.pk,
                                                   value__isnull=False)
        if self.tag:
            values = values.filter(Tagged(self.tag, through="keyword__"))
        return values.filter(Keyword.search_q(self.search, through="keyword__")) \
            if self.search else values

    def _missing(self) -> QuerySet[Keyword]:
        return self._all().exclude(Exists(KeywordMetricValue.objects.filter(
            keyword_id=OuterRef("pk"), metric_id=self.config.pk, value__isnull=False)))

    @property
    def _value_fields(self) -> list[tuple[str, bool]]:
        # One index in both directions: a second, descending one cost every value write.
        return [("value", self.descending), ("keyword_id", self.descending)]

    @property
    def _missing_fields(self) -> list[tuple[str, bool]]:
        return [("position", self.descending)]

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list[Keyword]:
        start, stop = window.start or 0, window.stop if window.stop is not None else self.count()
        ids: list[int] = []
        if self._value_count is None or start < self._value_count:
            ids += list(self._values().order_by(*_order(self._value_fields, reverse=False,
                                                            nullable_first=False)).values_list(
                "keyword_id", flat=True)[start:stop])
        if len(ids) < stop - start and not self.values_only:
            # The values ran out on this page (so they number start + what it holds), or
            # before it (a search counts them then).
            value_count = start + len(ids) if ids else self.value_count
            ids += list(self._missing().order_by(*_order(self._missing_fields, reverse=False,
                                                              nullable_first=False)).values_list(
                "pk", flat=True)[
                max(0, start - value_count):stop - value_count])
        return self._keywords(ids)

    def keyset(self, cursor: Keyword | None, *, backward: bool, size: int) -> list[Keyword]:
        """Up to `size` keywords after `cursor` (an annotated sort_value; before it when
        `backward`, nearest first): a range of kmv_metric_value_kw_idx from the cursor's
        (value, keyword id), then the keywords without a value from its position, so page
        1,000 costs what page 2 does."""
        values = self._values().values_list("keyword_id", flat=True)
        missing = self._missing().values_list("pk", flat=True)
        if self.values_only:
            missing = missing.none()
        in_values = cursor is None or cursor.sort_value is not None
        # The walk's two sources in forward order: keywords with a value, then those
        # without. A page starts in the cursor's source, from its key, and goes on into
        # the next one (backward: the previous one) from that source's end.
        sources = [(values, self._value_fields,
                    (cursor.sort_value, cursor.pk) if cursor is not None and in_values else None),
                   (missing, self._missing_fields,
                    None if in_values else (cursor.position,))]
        first = 0 if in_values else 1
        walk = sources[first::-1] if backward else sources[first:]
        ids: list[int] = []
        for step, (rows, fields, key) in enumerate(walk):
            ids += _keyset_slice(rows, fields, key if step == 0 else None, backward=backward,
                                 size=size - len(ids), nullable_first=False)
        return self._keywords(ids)

    def _keywords(self, ids: list[int]) -> list[Keyword]:
        keywords = Keyword.objects.filter(evaluation=self.evaluation).in_bulk(ids)
        return [keywords[pk] for pk in ids if pk in keywords]


def keyword_order(*, evaluation: Evaluation, configs: list[EvaluationMetric],
                  sort: str = "position", descending: bool = False, show: str = "",
                  search: str = "", tag: str = "",
                  tag_value_counts: Mapping[int, int] | None = None,
                  ) -> "MetricOrder | QuerySet[Keyword]":
    """What keyword_table pages through: MetricOrder when the table is sorted by a metric
    (or shows the worst), searched, in a segment or not, with no other filter; else
    keyword_queryset. `tag_value_counts`: per metric, how many of the tag's keywords have
    a value (the segment's stored count), when known."""
    metric_id = int(sort[1:]) if sort.startswith("m") else None
    if show == "worst" and metric_id is None and configs:
        metric_id, descending = configs[0].pk, False
    config = next((c for c in configs if c.pk == metric_id), None)
    if config is not None and show in ("", "worst"):
        return MetricOrder(evaluation=evaluation, config=config,
                           descending=descending and show != "worst",
                           values_only=show == "worst", search=search, tag=tag,
                           tag_value_count=(tag_value_counts or {}).get(config.pk))
    return keyword_queryset(evaluation=evaluation, configs=configs, sort=sort,
                            descending=descending, show=show, search=search, tag=tag)


def _cursor_keyword(*, evaluation: Evaluation, metric_id: int | None,
                    keyword_id: int) -> Keyword | None:
    """The keyword a cursor names, with its value of the sort metric; None when it is not
    one of the evaluation's (the table then shows page 1)."""
    keywords = Keyword.objects.filter(evaluation=evaluation, pk=keyword_id)
    if metric_id is not None:
        keywords = keywords.annotate(sort_value=Subquery(KeywordMetricValue.objects.filter(
            keyword_id=OuterRef("pk"), metric_id=metric_id).values("value")[:1]))
    return keywords.only("pk", "position", "normalized_text").first()


def keyword_table(*, evaluation: Evaluation, configs: list[EvaluationMetric],
                  sort: str = "position", descending: bool = False, show: str = "",
                  visibility: GradeVisibility, search: str = "",
                  page_number: int | str | None = 1, after: int | None = None,
                  before: int | None = None, per_page: int = KEYWORDS_PER_PAGE,
                  tag: str = "", tag_value_counts: Mapping[int, int] | None = None,
                  known_count: int | None = None) -> KeywordTable:
    """One page of the per-keyword table: values of every metric and, for the expanding
    rows, each keyword's snapshots with the slots the viewer may see. A cursor (the page
    starts `after` a keyword, or ends `before` one) reads the page along the sort's index
    from that keyword's key, whatever the depth; a bare page number pages with OFFSET.
    Seven queries at any size, six with `known_count`: how many keywords the table holds,
    when the caller has counted them already (a segment's, with no other filter)."""
    keywords = keyword_order(evaluation=evaluation, configs=configs, sort=sort,
                             descending=descending, show=show, search=search, tag=tag,
                             tag_value_counts=tag_value_counts)
    metric_id, _ = _sort_metric(configs=configs, sort=sort, descending=descending, show=show)
    cursor_id = before if before is not None else after
    cursor = None if cursor_id is None else _cursor_keyword(
        evaluation=evaluation, metric_id=metric_id, keyword_id=cursor_id)
    if cursor is None:
        paginator = Paginator(keywords, per_page)
        if known_count is not None:
            paginator.count = known_count  # a cached_property: set, it is not asked
        page = paginator.get_page(page_number)
        table_page = TablePage(list(page.object_list), page.number, page.paginator.count,
                               per_page, page.has_previous(), page.has_next())
    else:
        backward = before is not None
        if isinstance(keywords, MetricOrder):
            found = keywords.keyset(cursor, backward=backward, size=per_page + 1)
        else:
            fields, nullable = keyword_sort_fields(configs=configs, sort=sort,
                                                   descending=descending, show=show)
            key = tuple(getattr(cursor, name) for name, _ in fields)
            found = _keyset_slice(keywords, fields, key, backward=backward,
                                  size=per_page + 1, nullable_first=nullable)
        more = len(found) > per_page
        found = found[:per_page]
        number = int(page_number) if page_number else None
        if backward:
            found.reverse()
            # Back at the start: whatever the link said, this is page 1.
            number = number if more else 1
        table_page = TablePage(found, number,
                               keywords.count() if known_count is None else known_count,
                               per_page,
                               more_before=more if backward else True,
                               more_after=True if backward else more)
    page_keywords = table_page.object_list
    rows = keyword_rows(evaluation=evaluation, keywords=page_keywords)
    snapshots = snapshot_details([keyword.pk for keyword in page_keywords],
                                 visibility=visibility)
    return KeywordTable(page=table_page, rows=[TableRow(row, snapshots[row.keyword.pk])
                                               for row in rows])
