"""Reads for the evaluation dashboard (metric cards, agreement, distribution, per-keyword
table), the team dashboard and a search model's history; the metric identity helpers the
comparison and leaderboard pages share (metrics.reports.comparisons, metrics.reports.leaderboards).

Every number comes from stored values (KeywordMetricValue, EvaluationMetric.value,
MetricHistoryPoint) or from metrics_engine statistics over them; SQL only counts and groups.
Each selector runs a fixed number of queries whatever the number of keywords.
"""

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.core.cache import cache
from django.core.paginator import Paginator
from django.db.models import Count, Exists, F, Max, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import TruncDate
from django.utils import timezone

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword, SearchModel, Snapshot
from judgments.models import FeedbackSlot
from judgments.queue_selectors import grader_queue_size
from metrics import queries
from metrics.models import (
    DashboardCount,
    KeywordMetricValue,
    MetricHistoryPoint,
    RegressionVerdict,
    TeamBaseline,
)
from metrics.recompute import aggregates
from metrics.selectors import KeywordRow, keyword_rows
from metrics_engine import statistics
from metrics_engine import verdicts as core_verdicts
from searchtweak.access import GradeVisibility
from searchtweak.models import Team, User

# Below this share of graded slots the page warns that the values are provisional.
LOW_COVERAGE = 0.8
# Above this share of tied binary votes the page warns that ties are eating the metrics.
HIGH_TIE_RATE = 0.1
KEYWORDS_PER_PAGE = 50
SPARKLINE_POINTS = 60

MetricKey = core.MetricKey


def metric_key(config: EvaluationMetric) -> MetricKey:
    """What makes two configured metrics the same number (core.metric_key)."""
    return core.metric_key(config.code, config.k, config.params)


def metric_label(config: EvaluationMetric) -> str:
    return core.metric_label(config.code, config.k, config.params)


def metric_key_label(key: MetricKey) -> str:
    return core.metric_key_label(*key)


def metric_key_slug(key: MetricKey) -> str:
    code, k, params = key
    return ":".join([code, str(k), *(f"{n}={v}" for n, v in params)])


def metric_configs(evaluation_id: int) -> list[EvaluationMetric]:
    """The evaluation's metric configs with their stored means (value, keyword_count,
    updated_at)."""
    return list(EvaluationMetric.objects.filter(evaluation_id=evaluation_id)
                .with_stored_mean().order_by("position", "id"))


def value_delta(value: float | None, reference: float | None) -> float | None:
    return None if value is None or reference is None else value - reference


# --- baseline ------------------------------------------------------------------------------


def team_baseline(*, team_id: int) -> Evaluation | None:
    row = TeamBaseline.objects.select_related("evaluation").filter(team_id=team_id).first()
    return row.evaluation if row else None


# --- the evaluation page -------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """What the metric cards compare against: the team baseline or the model's previous
    finished evaluation."""

    evaluation: Evaluation | None
    kind: str  # "baseline", "previous" or "" (nothing to compare with)
    # The evaluation compared is itself the team's baseline (read with it, no query more).
    is_team_baseline: bool = False


@dataclass(frozen=True)
class MetricCard:
    config: EvaluationMetric
    label: str
    description: str
    reference_value: float | None
    delta: float | None
    """Mean of (this - reference) over the keywords both have a value for
    (core.verdicts.shared_mean_delta): the delta every surface shows."""
    history: list[float | None]
    shared_count: int = 0
    """The keywords `delta` covers."""
    verdict: str = ""
    """This metric's word in the standing verdict against the reference (RegressionVerdict
    value), "" when there is none against it."""
    verdict_reason: str = ""
    verdict_rule: str = ""
    in_reference: bool = False
    """The reference configures this metric too."""

    @property
    def verdict_label(self) -> str:
        return RegressionVerdict.Verdict(self.verdict).label if self.verdict else ""

    @property
    def value(self) -> float | None:
        return self.config.value

    @property
    def keyword_count(self) -> int:
        return self.config.keyword_count

    @property
    def lower(self) -> float | None:
        return self.config.lower

    @property
    def upper(self) -> float | None:
        return self.config.upper

    @property
    def bounds_exact(self) -> bool:
        return self.config.bounds_exact


def evaluation_reference(*, evaluation: Evaluation, against: str = "") -> Reference:
    """The team's baseline unless `against` is "previous" or the evaluation is the baseline
    itself; otherwise the latest evaluation of the same search model finished before it."""
    baseline = team_baseline(team_id=evaluation.team_id)
    is_baseline = baseline is not None and baseline.pk == evaluation.pk
    if against != "previous":
        if baseline is not None and not is_baseline:
            return Reference(baseline, "baseline")
        if against == "baseline":
            return Reference(None, "", is_baseline)
    previous = Evaluation.objects.filter(
        model_id=evaluation.model_id, status=Evaluation.Status.FINISHED,
        finished_at__lt=evaluation.finished_at or timezone.now(),
    ).exclude(pk=evaluation.pk).order_by("-finished_at", "-id").first()
    return Reference(previous, "previous" if previous else "", is_baseline)


def metric_cards(*, evaluation: Evaluation, reference: Reference,
                 configs: list[EvaluationMetric] | None = None,
                 verdict: RegressionVerdict | None = None) -> list[MetricCard]:
    """One card per configured metric: its mean, history and, against the reference, the
    delta over the keywords both have a value for (two more queries: the reference's
    configs and the values of both); `verdict` (the standing one) gives each card its
    metric's word when it was judged against this reference."""
    configs = metric_configs(evaluation.pk) if configs is None else configs
    history: dict[int, list[float | None]] = defaultdict(list)
    for metric_id, value in MetricHistoryPoint.objects.filter(metric__in=configs).order_by(
            "recorded_at", "id").values_list("metric_id", "value"):
        history[metric_id].append(value)
    reference_configs: dict[MetricKey, EvaluationMetric] = {}
    shared: dict[int, tuple[float | None, int]] = {}
    if reference.evaluation is not None:
        reference_configs = {metric_key(c): c for c in metric_configs(reference.evaluation.pk)}
        pairs = {c.pk: reference_configs[metric_key(c)].pk for c in configs
                 if metric_key(c) in reference_configs}
        values: dict[int, dict[str, float]] = defaultdict(dict)
        if pairs:
            for metric_id, normalized, value in KeywordMetricValue.objects.filter(
                    metric_id__in=[*pairs, *pairs.values()], value__isnull=False,
            ).values_list("metric_id", "keyword__normalized_text", "value"):
                values[metric_id][normalized] = value
        shared = {pk: core_verdicts.shared_mean_delta(values[base_pk], values[pk])
                  for pk, base_pk in pairs.items()}
    judged: dict[MetricKey, dict] = {}
    if (verdict is not None and reference.evaluation is not None
            and verdict.baseline_id == reference.evaluation.pk):
        judged = {core.metric_key(m["code"], m["k"], m.get("params") or {}): m
                  for m in verdict.metrics if "code" in m and "k" in m}
    cards = []
    for config in configs:
        key = metric_key(config)
        reference_config = reference_configs.get(key)
        delta, shared_count = shared.get(config.pk, (None, 0))
        spec = core.METRICS.get(config.code)
        word = judged.get(key, {})
        cards.append(MetricCard(
            config=config, label=metric_label(config),
            description=spec.description if spec else "",
            reference_value=reference_config.value if reference_config else None,
            delta=delta, shared_count=shared_count, in_reference=reference_config is not None,
            history=history[config.pk][-SPARKLINE_POINTS:],
            verdict=word.get("verdict", ""), verdict_reason=word.get("reason", ""),
            verdict_rule=verdict.rule_text if word and verdict else "",
        ))
    return cards


@dataclass(frozen=True)
class Agreement:
    slot_count: int
    graded_count: int
    coverage: float | None
    tie_rate: float | None  # binary 3-slot evaluations only
    kappa: float | None
    kappa_reading: str
    advice: list[str] = field(default_factory=list)
    # Under "1 → 3": how many results got more graders, and why (judgments.adaptive).
    adaptive: str = ""


# Landis & Koch (1977), "The measurement of observer agreement for categorical data":
# upper bound of each band (inclusive) and its name.
KAPPA_BANDS = [(0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial"),
               (math.inf, "almost perfect")]


def kappa_reading(kappa: float | None) -> str:
    if kappa is None:
        return ("Not enough overlap to measure: agreement needs results graded by several "
                "graders.")
    if kappa < 0:
        band = "poor (worse than chance)"
    else:
        band = next(name for upper, name in KAPPA_BANDS if kappa <= upper)
    return (f"The graders' agreement beyond chance is {band} (Fleiss' κ = {kappa:.2f}; "
            "Landis & Koch bands).")


def _snapshot_patterns(evaluation_id: int) -> list[tuple[list[int | None], int]]:
    """Every snapshot's slot grades as (grades, how many snapshots share them): the
    recompute's counts (metrics.recompute.aggregates) once built, else counted in SQL over
    every slot. With at most three slots per snapshot the multiset of grades is exactly
    (count, min, max, sum): the middle grade is sum - min - max."""
    stored = dict(DashboardCount.objects.filter(
        Q(key=aggregates.BUILT) | Q(key__startswith="p:"), evaluation_id=evaluation_id,
        count__gt=0,
    ).values_list("key", "count"))
    if aggregates.BUILT in stored:
        rows = [(*aggregates.parse_pattern(key), count) for key, count in sorted(stored.items())
                if key != aggregates.BUILT]
    else:
        rows = queries.snapshot_grade_patterns(evaluation_id=evaluation_id)
    patterns = []
    for total, graded, lo, hi, grade_sum, count in rows:
        if total > 3:
            raise ValueError("a snapshot has more than three slots")
        if graded == 3:
            grades: list[int | None] = [lo, grade_sum - lo - hi, hi]
        else:
            grades = [lo, hi][:graded] if graded == 2 else [lo][:graded]
        patterns.append((grades + [None] * (total - graded), count))
    return patterns


def evaluation_agreement(*, evaluation: Evaluation,
                         configs: list[EvaluationMetric] | None = None) -> Agreement:
    """Coverage, tie rate and Fleiss' kappa with their readings and advice.

    Given the evaluation's metric configs, the result is cached under the evaluation's
    grade state: every grade change ends in a means refresh that moves the configs'
    updated_at (written even when a mean is unchanged), so a new grade means a new key. It
    spares the database a GROUP BY over every slot on each live refresh of every open dashboard.
    """
    stamps = [c.updated_at for c in configs or [] if c.updated_at is not None]
    if not stamps:
        return _evaluation_agreement(evaluation)
    key = (f"metrics:agreement:{evaluation.pk}:"
           f"{max(stamps).isoformat()}:{evaluation.scale}:{evaluation.strategy}")
    agreement = cache.get(key)
    if agreement is None:
        agreement = _evaluation_agreement(evaluation)
        cache.set(key, agreement, timeout=600)
    return agreement


def _adaptive_summary(evaluation: Evaluation,
                      patterns: list[tuple[list[int | None], int]]) -> str:
    """'1 → 3': the results with two and three slots, and the slots opened by reason."""
    sizes: dict[int, int] = defaultdict(int)
    for grades, count in patterns:
        sizes[len(grades)] += count
    reasons = (FeedbackSlot.objects.filter(evaluation_id=evaluation.pk)
               .exclude(opened_because="").values_list("opened_because")
               .annotate(n=Count("id")).order_by("-n", "opened_because"))
    labels = dict(FeedbackSlot._meta.get_field("opened_because").choices)
    why = "; ".join(f"{labels[reason].lower()}: {n}" for reason, n in reasons)
    return (f"1 grader, up to 3 where it matters: {sizes[2] + sizes[3]} of "
            f"{sum(sizes.values())} results got a second grader, {sizes[3]} a third"
            + (f" (slots opened because {why})." if why else "."))


def _evaluation_agreement(evaluation: Evaluation) -> Agreement:
    patterns = _snapshot_patterns(evaluation.pk)
    slot_count = sum(len(grades) * count for grades, count in patterns)
    graded_count = sum(sum(g is not None for g in grades) * count for grades, count in patterns)
    # The counted forms: the statistics cost the distinct patterns, not the snapshots.
    coverage = statistics.coverage_counted(patterns)
    tie_rate = None
    if evaluation.scale == "binary" and evaluation.max_slots == 3:
        tie_rate = statistics.binary_tie_rate_counted(patterns)
    # Under "1 → 3" most results keep one slot: kappa reads the results that got three.
    kappa = statistics.fleiss_kappa_counted(
        [(grades, count) for grades, count in patterns if len(grades) == 3]
        if evaluation.is_adaptive else patterns) if evaluation.max_slots > 1 else None
    advice = []
    if coverage is not None and coverage < LOW_COVERAGE:
        advice.append(
            f"Only {coverage:.0%} of the slots are graded. Metrics count only what is "
            "graded (P@k divides by the judged positions, CG/DCG/nDCG count an ungraded "
            "position as 0), so the values are provisional: the range beside each shows "
            "where it can still go once every result is graded."
        )
    if tie_rate is not None and tie_rate > HIGH_TIE_RATE:
        advice.append(
            f"{tie_rate:.0%} of the graded results are ties (as many 'relevant' as 'not "
            "relevant' votes, e.g. one grade each of two). A tie counts as ungraded in every "
            "metric: let the third grader finish those results, or have a lead grade them, "
            "and tighten the guidelines if graders keep splitting."
        )
    if kappa is not None and kappa < 0.4:
        advice.append(
            "Graders often disagree: review the guidelines with them and look at the "
            "keywords where their grades split before trusting small differences."
        )
    adaptive = _adaptive_summary(evaluation, patterns) if evaluation.is_adaptive else ""
    return Agreement(slot_count=slot_count, graded_count=graded_count, coverage=coverage,
                     tie_rate=tie_rate, kappa=kappa, kappa_reading=kappa_reading(kappa),
                     adaptive=adaptive,
                     advice=advice)


def metric_distribution(*, config: EvaluationMetric) -> list[float]:
    """The non-null per-keyword values of one configured metric."""
    return list(KeywordMetricValue.objects.filter(metric=config, value__isnull=False)
                .values_list("value", flat=True))


def metric_histogram(*, config: EvaluationMetric) -> list[int] | None:
    """How many of the metric's non-null keyword values fall in each tenth of [0, 1]
    (numpy.histogram's bins), from the recompute's counts; None when they are not built or
    some value lies outside [0, 1] (the page then bins metric_distribution over the
    values' own range)."""
    prefix = f"b:{config.pk}:"
    stored = dict(DashboardCount.objects.filter(
        Q(key=aggregates.BUILT) | Q(key__startswith=prefix), evaluation_id=config.evaluation_id,
    ).values_list("key", "count"))
    if aggregates.BUILT not in stored or stored.get(f"{prefix}-1"):
        return None
    return [stored.get(f"{prefix}{index}", 0) for index in range(aggregates.BINS)]


# --- the per-keyword table -----------------------------------------------------------------

FILTERS = {"": "All", "failed": "Failed", "ungraded": "Not fully graded",
           "worst": "Worst first"}


@dataclass(frozen=True)
class SlotView:
    """What the expanding rows show of one slot (plain values: the table builds hundreds)."""

    index: int
    grade: int | None
    unsure: bool
    username: str | None


@dataclass(frozen=True)
class SnapshotDetail:
    snapshot: Snapshot
    slots: list[SlotView]


def snapshot_details(keyword_ids: list[int], *, visibility: GradeVisibility
                     ) -> dict[int, list[SnapshotDetail]]:
    """Each keyword's snapshots in position order with the slots `visibility` lets the
    viewer see (a grader: their own only), in two queries."""
    slots: dict[int, list[SlotView]] = defaultdict(list)
    rows = FeedbackSlot.objects.filter(visibility.slots(), keyword_id__in=keyword_ids).order_by(
        "snapshot_id", "index").values_list(
        "snapshot_id", "index", "grade", "unsure", "user__username", "reused_from_pool_id")
    for snapshot_id, index, grade, unsure, username, pool_id in rows:
        # A grade copied from the team's imported judgments has no grader.
        if username is None and pool_id is not None:
            username = "(import)"
        slots[snapshot_id].append(SlotView(index, grade, unsure, username))
    details: dict[int, list[SnapshotDetail]] = defaultdict(list)
    for snapshot in Snapshot.objects.filter(keyword_id__in=keyword_ids).only(
            "pk", "keyword_id", "position", "doc_id", "name").order_by("keyword_id", "position"):
        details[snapshot.keyword_id].append(SnapshotDetail(snapshot, slots[snapshot.pk]))
    return details


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
                     search: str = "") -> QuerySet[Keyword]:
    """The evaluation's keywords filtered and ordered in SQL. `sort` is "position",
    "text" or "m<config id>"; "worst" keeps keywords with a value of the sort metric (the
    first metric when sorting by position or text) and puts the lowest first."""
    keywords = Keyword.objects.filter(evaluation=evaluation)
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
    value cost a read of all of them (the count then reads the keywords' texts)."""

    def __init__(self, *, evaluation: Evaluation, config: EvaluationMetric,
                 descending: bool, values_only: bool, search: str = "") -> None:
        self.evaluation, self.config = evaluation, config
        self.descending, self.values_only = descending, values_only
        self.search = search
        self._value_count: int | None = None if self.search else (config.keyword_count or 0)
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
        return keywords.filter(Keyword.search_q(self.search)) if self.search else keywords

    def _values(self) -> QuerySet[KeywordMetricValue]:
        values = KeywordMetricValue.objects.filter(metric_id=self.config.pk,
                                                   value__isnull=False)
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
                  search: str = "") -> "MetricOrder | QuerySet[Keyword]":
    """What keyword_table pages through: MetricOrder when the table is sorted by a metric
    (or shows the worst), searched or not, with no other filter; else keyword_queryset."""
    metric_id = int(sort[1:]) if sort.startswith("m") else None
    if show == "worst" and metric_id is None and configs:
        metric_id, descending = configs[0].pk, False
    config = next((c for c in configs if c.pk == metric_id), None)
    if config is not None and show in ("", "worst"):
        return MetricOrder(evaluation=evaluation, config=config,
                           descending=descending and show != "worst",
                           values_only=show == "worst", search=search)
    return keyword_queryset(evaluation=evaluation, configs=configs, sort=sort,
                            descending=descending, show=show, search=search)


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
                  before: int | None = None, per_page: int = KEYWORDS_PER_PAGE) -> KeywordTable:
    """One page of the per-keyword table: values of every metric and, for the expanding
    rows, each keyword's snapshots with the slots the viewer may see. A cursor (the page
    starts `after` a keyword, or ends `before` one) reads the page along the sort's index
    from that keyword's key, whatever the depth; a bare page number pages with OFFSET.
    Seven queries at any size."""
    keywords = keyword_order(evaluation=evaluation, configs=configs, sort=sort,
                             descending=descending, show=show, search=search)
    metric_id, _ = _sort_metric(configs=configs, sort=sort, descending=descending, show=show)
    cursor_id = before if before is not None else after
    cursor = None if cursor_id is None else _cursor_keyword(
        evaluation=evaluation, metric_id=metric_id, keyword_id=cursor_id)
    if cursor is None:
        page = Paginator(keywords, per_page).get_page(page_number)
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
        table_page = TablePage(found, number, keywords.count(), per_page,
                               more_before=more if backward else True,
                               more_after=True if backward else more)
    page_keywords = table_page.object_list
    rows = keyword_rows(evaluation=evaluation, keywords=page_keywords)
    snapshots = snapshot_details([keyword.pk for keyword in page_keywords],
                                 visibility=visibility)
    return KeywordTable(page=table_page, rows=[TableRow(row, snapshots[row.keyword.pk])
                                               for row in rows])


# --- team dashboard ------------------------------------------------------------------------


@dataclass(frozen=True)
class GraderActivity:
    username: str
    graded_today: int
    graded_week: int
    last_graded_at: object


@dataclass(frozen=True)
class TeamDashboard:
    active: list[Evaluation]
    queue_size: int
    recent: list[Evaluation]
    baseline: Evaluation | None
    graders: list[GraderActivity]
    daily_counts: list[tuple[str, int]]


def team_dashboard(*, team: Team, user: User, days: int = 14) -> TeamDashboard:
    now = timezone.now()
    active = list(Evaluation.objects.filter(
        team=team, archived_at=None,
        status__in=[Evaluation.Status.FETCHING, Evaluation.Status.ACTIVE],
    ).select_related("model").with_recompute_state().order_by("started_at", "id")[:20])
    recent = list(Evaluation.objects.filter(
        team=team, status=Evaluation.Status.FINISHED, archived_at=None,
    ).select_related("model").order_by("-finished_at", "-id").prefetch_related(
        Prefetch("metric_configs",
                 queryset=EvaluationMetric.objects.with_stored_mean().order_by("position", "id"))
    )[:10])
    start_of_day = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    activity = (
        FeedbackSlot.objects.filter(evaluation__team=team, user__isnull=False,
                                    grade__isnull=False, reused_from__isnull=True,
                                    graded_at__gte=now - timedelta(days=7))
        .values("user__username")
        .annotate(week=Count("id"), today=Count("id", filter=Q(graded_at__gte=start_of_day)),
                  last=Max("graded_at"))
        .order_by("-week", "user__username")
    )
    graders = [GraderActivity(row["user__username"], row["today"], row["week"], row["last"])
               for row in activity]
    since = (start_of_day - timedelta(days=days - 1))
    per_day = dict(
        FeedbackSlot.objects.filter(evaluation__team=team, grade__isnull=False,
                                    reused_from__isnull=True, reused_from_pool__isnull=True,
                                    graded_at__gte=since)
        .annotate(day=TruncDate("graded_at")).values("day").annotate(n=Count("id"))
        .values_list("day", "n")
    )
    daily = []
    for offset in range(days):
        day = (since + timedelta(days=offset)).date()
        daily.append((day.isoformat(), per_day.get(day, 0)))
    return TeamDashboard(
        active=active, queue_size=grader_queue_size(user=user, team=team), recent=recent,
        baseline=team_baseline(team_id=team.pk), graders=graders, daily_counts=daily,
    )


# --- search model history ------------------------------------------------------------------


@dataclass(frozen=True)
class MetricHistory:
    key: MetricKey
    label: str
    points: list[tuple[Evaluation, float | None, int]]  # evaluation, value, keyword count
    # Each point's configured metric (its stored values give the point's interval).
    configs: list[EvaluationMetric] = field(default_factory=list)


def model_history(*, model: SearchModel) -> list[MetricHistory]:
    """Each metric's value over the model's finished evaluations, oldest first."""
    configs = EvaluationMetric.objects.filter(
        evaluation__model=model, evaluation__status=Evaluation.Status.FINISHED,
    ).with_stored_mean().select_related("evaluation").order_by(
        "evaluation__finished_at", "evaluation_id", "position", "id")
    series: dict[MetricKey, list] = {}
    configs_of: dict[MetricKey, list[EvaluationMetric]] = {}
    for config in configs:
        series.setdefault(metric_key(config), []).append(
            (config.evaluation, config.value, config.keyword_count))
        configs_of.setdefault(metric_key(config), []).append(config)
    return [MetricHistory(key, metric_key_label(key), points, configs_of[key])
            for key, points in series.items()]
