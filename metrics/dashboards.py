"""Reads for the dashboard, comparison, history and leaderboard pages (and the compare API).

Every number comes from stored values (KeywordMetricValue, EvaluationMetric.value,
MetricHistoryPoint) or from metrics.core statistics over them; SQL only counts and groups.
Each selector runs a fixed number of queries whatever the number of keywords.
"""

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from django.core.cache import cache
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Count, Exists, F, Max, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import TruncDate
from django.utils import timezone

from evaluations.models import Evaluation, EvaluationMetric, Keyword, SearchModel, Snapshot
from judgments.models import FeedbackSlot
from judgments.selectors import grader_queue_size
from metrics import core
from metrics.core import statistics
from metrics.models import KeywordMetricValue, MetricHistoryPoint, TeamBaseline
from metrics.selectors import KeywordRow, keyword_rows
from searchtweak.models import Membership, Team, User

# Below this share of graded slots the page warns that the values are provisional.
LOW_COVERAGE = 0.8
# Above this share of tied binary votes the page warns that ties are eating the metrics.
HIGH_TIE_RATE = 0.1
SIGNIFICANCE = 0.05
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


def _configs(evaluation_id: int) -> list[EvaluationMetric]:
    return list(EvaluationMetric.objects.filter(evaluation_id=evaluation_id)
                .order_by("position", "id"))


def _delta(value: float | None, reference: float | None) -> float | None:
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


@dataclass(frozen=True)
class MetricCard:
    config: EvaluationMetric
    label: str
    description: str
    reference_value: float | None
    delta: float | None
    history: list[float | None]

    @property
    def value(self) -> float | None:
        return self.config.value

    @property
    def keyword_count(self) -> int:
        return self.config.keyword_count


def evaluation_reference(*, evaluation: Evaluation, against: str = "") -> Reference:
    """The team's baseline unless `against` is "previous" or the evaluation is the baseline
    itself; otherwise the latest evaluation of the same search model finished before it."""
    if against != "previous":
        baseline = team_baseline(team_id=evaluation.team_id)
        if baseline is not None and baseline.pk != evaluation.pk:
            return Reference(baseline, "baseline")
        if against == "baseline":
            return Reference(None, "")
    previous = Evaluation.objects.filter(
        model_id=evaluation.model_id, status=Evaluation.Status.FINISHED,
        finished_at__lt=evaluation.finished_at or timezone.now(),
    ).exclude(pk=evaluation.pk).order_by("-finished_at", "-id").first()
    return Reference(previous, "previous") if previous else Reference(None, "")


def metric_cards(*, evaluation: Evaluation, reference: Reference,
                 configs: list[EvaluationMetric] | None = None) -> list[MetricCard]:
    configs = _configs(evaluation.pk) if configs is None else configs
    history: dict[int, list[float | None]] = defaultdict(list)
    for metric_id, value in MetricHistoryPoint.objects.filter(metric__in=configs).order_by(
            "recorded_at", "id").values_list("metric_id", "value"):
        history[metric_id].append(value)
    reference_values: dict[MetricKey, float | None] = {}
    if reference.evaluation is not None:
        reference_values = {metric_key(c): c.value for c in _configs(reference.evaluation.pk)}
    cards = []
    for config in configs:
        reference_value = reference_values.get(metric_key(config))
        spec = core.METRICS.get(config.code)
        cards.append(MetricCard(
            config=config, label=metric_label(config),
            description=spec.description if spec else "",
            reference_value=reference_value, delta=_delta(config.value, reference_value),
            history=history[config.pk][-SPARKLINE_POINTS:],
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
    """Every snapshot's slot grades as (grades, how many snapshots share them), counted
    in SQL. With at most three slots per snapshot the multiset of grades is exactly
    (count, min, max, sum): the middle grade is sum - min - max."""
    table = connection.ops.quote_name(FeedbackSlot._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT total, graded, lo, hi, grade_sum, COUNT(*) FROM ("
            " SELECT COUNT(*) AS total, COUNT(grade) AS graded, MIN(grade) AS lo,"
            " MAX(grade) AS hi, SUM(grade) AS grade_sum"
            f" FROM {table} WHERE evaluation_id = %s GROUP BY snapshot_id) per_snapshot"
            " GROUP BY total, graded, lo, hi, grade_sum",
            [evaluation_id],
        )
        rows = cursor.fetchall()
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
    updated_at (and usually the progress), so a new grade means a new key. It spares the
    database a GROUP BY over every slot on each live refresh of every open dashboard.
    """
    stamps = [c.updated_at for c in configs or [] if c.updated_at is not None]
    if not stamps:
        return _evaluation_agreement(evaluation)
    key = (f"metrics:agreement:{evaluation.pk}:{evaluation.progress}:"
           f"{max(stamps).isoformat()}:{evaluation.scale}:{evaluation.strategy}")
    agreement = cache.get(key)
    if agreement is None:
        agreement = _evaluation_agreement(evaluation)
        cache.set(key, agreement, timeout=600)
    return agreement


def _evaluation_agreement(evaluation: Evaluation) -> Agreement:
    patterns = _snapshot_patterns(evaluation.pk)
    snapshots: list[list[int | None]] = []
    for grades, count in patterns:
        snapshots += [grades] * count
    slot_count = sum(len(grades) * count for grades, count in patterns)
    graded_count = sum(sum(g is not None for g in grades) * count for grades, count in patterns)
    coverage = statistics.coverage(snapshots)
    tie_rate = None
    if evaluation.scale == "binary" and evaluation.strategy == 3:
        tie_rate = statistics.binary_tie_rate(snapshots)
    kappa = statistics.fleiss_kappa(snapshots) if evaluation.strategy > 1 else None
    advice = []
    if coverage is not None and coverage < LOW_COVERAGE:
        advice.append(
            f"Only {coverage:.0%} of the slots are graded. Metrics count only what is "
            "graded (P@k divides by the judged positions, CG/DCG/nDCG count an ungraded "
            "position as 0), so the values are provisional and may still move a lot: keep "
            "grading before deciding anything from them."
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
    return Agreement(slot_count=slot_count, graded_count=graded_count, coverage=coverage,
                     tie_rate=tie_rate, kappa=kappa, kappa_reading=kappa_reading(kappa),
                     advice=advice)


def metric_distribution(*, config: EvaluationMetric) -> list[float]:
    """The non-null per-keyword values of one configured metric."""
    return list(KeywordMetricValue.objects.filter(metric=config, value__isnull=False)
                .values_list("value", flat=True))


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


def _snapshot_details(keyword_ids: list[int]) -> dict[int, list[SnapshotDetail]]:
    """Each keyword's snapshots in position order with their slots, in two queries."""
    slots: dict[int, list[SlotView]] = defaultdict(list)
    for snapshot_id, index, grade, unsure, username, pool_id in FeedbackSlot.objects.filter(
            keyword_id__in=keyword_ids).order_by("snapshot_id", "index").values_list(
            "snapshot_id", "index", "grade", "unsure", "user__username", "reused_from_pool_id"):
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
    page: Page
    rows: list[TableRow]


def keyword_queryset(*, evaluation: Evaluation, configs: list[EvaluationMetric],
                     sort: str = "position", descending: bool = False, show: str = "",
                     search: str = "") -> QuerySet[Keyword]:
    """The evaluation's keywords filtered and ordered in SQL. `sort` is "position",
    "text" or "m<config id>"; "worst" keeps keywords with a value of the sort metric (the
    first metric when sorting by position or text) and puts the lowest first."""
    keywords = Keyword.objects.filter(evaluation=evaluation)
    if search:
        keywords = keywords.filter(normalized_text__contains=Keyword.normalize(search))
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
        order = F("sort_value").desc(nulls_last=True) if descending else F(
            "sort_value").asc(nulls_last=True)
        return keywords.order_by(order, "position")
    if sort == "text":
        return keywords.order_by("-normalized_text" if descending else "normalized_text")
    return keywords.order_by("-position" if descending else "position")


def keyword_table(*, evaluation: Evaluation, configs: list[EvaluationMetric],
                  sort: str = "position", descending: bool = False, show: str = "",
                  search: str = "", page_number: int | str | None = 1,
                  per_page: int = KEYWORDS_PER_PAGE) -> KeywordTable:
    """One page of the per-keyword table: values of every metric and, for the expanding
    rows, each keyword's snapshots with their slots. Six queries at any size."""
    keywords = keyword_queryset(evaluation=evaluation, configs=configs, sort=sort,
                                descending=descending, show=show, search=search)
    page = Paginator(keywords, per_page).get_page(page_number)
    page_keywords = list(page.object_list)
    rows = keyword_rows(evaluation=evaluation, keywords=page_keywords)
    snapshots = _snapshot_details([keyword.pk for keyword in page_keywords])
    return KeywordTable(page=page, rows=[TableRow(row, snapshots[row.keyword.pk])
                                         for row in rows])


# --- comparing two evaluations -------------------------------------------------------------


@dataclass(frozen=True)
class MetricComparison:
    key: MetricKey
    label: str
    config_a: EvaluationMetric
    config_b: EvaluationMetric
    result: statistics.PairedComparison
    ci: tuple[float, float] | None
    verdict: str
    direction: str  # "better", "worse", "same", "unknown"
    # Keywords with a value on both sides whose result lists are identical (RBO 1) but
    # whose value differs: the grades changed, not the ranking.
    grading_only_count: int = 0
    ranking_note: str | None = None

    @property
    def both_count(self) -> int:
        """Shared keywords with a value on both sides: what every statistic here covers."""
        return self.result.keyword_count


@dataclass(frozen=True)
class KeywordComparison:
    text: str
    normalized_text: str
    keyword_a_id: int
    keyword_b_id: int
    values_a: list[float | None]
    values_b: list[float | None]
    deltas: list[float | None]
    rbo: float | None
    # A and B returned the same documents in the same order (top RBO-k): RBO 1.
    same_ranking: bool = False

    @property
    def cells(self) -> list[tuple[float | None, float | None, float | None]]:
        return list(zip(self.values_a, self.values_b, self.deltas, strict=True))

    def change(self, index: int) -> float | None:
        delta = self.deltas[index] if self.deltas else None
        return None if delta is None else abs(delta)


@dataclass(frozen=True)
class Comparison:
    a: Evaluation
    b: Evaluation
    metrics: list[MetricComparison]
    keywords: list[KeywordComparison]
    only_a_count: int
    only_b_count: int
    rbo_k: int
    mean_rbo: float | None

    @property
    def shared_count(self) -> int:
        return len(self.keywords)

    @property
    def identical_rankings(self) -> bool:
        """Every shared keyword has the same result list in A and B (RBO 1)."""
        return bool(self.keywords) and all(row.same_ranking for row in self.keywords)


def comparison_verdict(result: statistics.PairedComparison,
                       ci: tuple[float, float] | None) -> tuple[str, str]:
    """A plain-words reading of B against A: (sentence, direction)."""
    if result.keyword_count < 2 or result.mean_delta is None:
        return ("Too few keywords with a value in both evaluations to tell.", "unknown")
    p = result.randomization_p
    delta = result.mean_delta
    ci_text = f" (95% CI of the change {ci[0]:+.4f} to {ci[1]:+.4f})" if ci else ""
    if delta == 0 or p is None or p >= SIGNIFICANCE:
        return (f"No clear difference: B changes the mean by {delta:+.4f}{ci_text}, which "
                f"chance alone produces often (randomization p = {_p_text(p)}).", "same")
    word = "better" if delta > 0 else "worse"
    return (f"B is {word} than A: {delta:+.4f} on average over {result.keyword_count} "
            f"keywords ({result.wins} up, {result.losses} down, {result.ties} unchanged)"
            f"{ci_text}; unlikely to be chance (randomization p = {p:.3f}, "
            f"t-test p = {_p_text(result.t_test_p)}).", word)


def ranking_note(*, label: str, both_count: int, same_count: int, grading_only_count: int,
                 mean_delta: float | None) -> str | None:
    """A warning when values moved although the rankings did not: a grading difference
    (new or changed grades, another scale or transformer), not a ranking one."""
    if not grading_only_count:
        return None
    if same_count == both_count:
        moved = f" (mean Δ {mean_delta:+.4f})" if mean_delta else ""
        return (f"The rankings are identical (RBO 1) for all {both_count} keyword"
                f"{'s' if both_count != 1 else ''} with a value on both sides, yet {label} "
                f"moved{moved}: a grading difference, not a ranking one.")
    return (f"{grading_only_count} of {both_count} keywords have identical rankings (RBO 1) "
            f"but a different {label}: grading differences, not ranking ones.")


def _p_text(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.3f}"


def evaluation_comparison(*, a: Evaluation, b: Evaluation, sort_index: int = 0,
                          rbo_k: int | None = None, rbo_p: float = 0.9,
                          resamples: int = 10_000) -> Comparison:
    """B against A over the keywords they share (matched by normalized text) for every
    metric configured in both with the same code, k and parameters. Keywords come sorted
    by the largest change of the `sort_index`-th shared metric, then by lowest RBO."""
    keywords_a = dict(Keyword.objects.filter(evaluation=a).values_list("normalized_text", "pk"))
    keywords_b = dict(Keyword.objects.filter(evaluation=b).values_list("normalized_text", "pk"))
    texts = dict(Keyword.objects.filter(evaluation=a).values_list("normalized_text", "text"))
    shared = [text for text in keywords_a if text in keywords_b]
    configs_b = {metric_key(c): c for c in _configs(b.pk)}
    pairs = [(c, configs_b[metric_key(c)]) for c in _configs(a.pk) if metric_key(c) in configs_b]
    stored: dict[tuple[int, int], float | None] = {
        (keyword_id, metric_id): value
        for keyword_id, metric_id, value in KeywordMetricValue.objects.filter(
            metric_id__in=[c.pk for pair in pairs for c in pair]
        ).values_list("keyword_id", "metric_id", "value")
    }
    if rbo_k is None:
        rbo_k = max((pair[0].k for pair in pairs), default=10)
    doc_ids: dict[int, list[str]] = defaultdict(list)
    for keyword_id, doc_id in Snapshot.objects.filter(
            keyword__evaluation_id__in=[a.pk, b.pk], position__lte=rbo_k,
    ).order_by("keyword_id", "position").values_list("keyword_id", "doc_id"):
        doc_ids[keyword_id].append(doc_id)

    same_ranking = {t: doc_ids[keywords_a[t]] == doc_ids[keywords_b[t]] for t in shared}
    metrics = []
    for config_a, config_b in pairs:
        values_a = {t: stored.get((keywords_a[t], config_a.pk)) for t in shared}
        values_b = {t: stored.get((keywords_b[t], config_b.pk)) for t in shared}
        result = statistics.paired_comparison(values_a, values_b, resamples=resamples)
        both = [t for t in shared if values_a[t] is not None and values_b[t] is not None]
        deltas = [values_b[t] - values_a[t] for t in both]
        ci = statistics.bootstrap_ci(deltas, resamples=resamples) if deltas else None
        verdict, direction = comparison_verdict(result, ci)
        grading_only = sum(1 for t, delta in zip(both, deltas, strict=True)
                           if same_ranking[t] and delta != 0)
        label = metric_label(config_a)
        metrics.append(MetricComparison(
            key=metric_key(config_a), label=label, config_a=config_a,
            config_b=config_b, result=result, ci=ci, verdict=verdict, direction=direction,
            grading_only_count=grading_only,
            ranking_note=ranking_note(
                label=label, both_count=len(both), grading_only_count=grading_only,
                same_count=sum(1 for t in both if same_ranking[t]),
                mean_delta=result.mean_delta),
        ))

    rows = []
    for text in shared:
        ka, kb = keywords_a[text], keywords_b[text]
        values_a = [stored.get((ka, ca.pk)) for ca, _ in pairs]
        values_b = [stored.get((kb, cb.pk)) for _, cb in pairs]
        rows.append(KeywordComparison(
            text=texts[text], normalized_text=text, keyword_a_id=ka, keyword_b_id=kb,
            values_a=values_a, values_b=values_b,
            deltas=[_delta(vb, va) for va, vb in zip(values_a, values_b, strict=True)],
            rbo=core.rbo(doc_ids[ka], doc_ids[kb], k=rbo_k, p=rbo_p),
            same_ranking=same_ranking[text],
        ))
    index = sort_index if 0 <= sort_index < len(pairs) else 0
    rows.sort(key=lambda row: (
        row.change(index) is None, -(row.change(index) or 0.0),
        row.rbo if row.rbo is not None else 1.0, row.normalized_text,
    ))
    rbos = [row.rbo for row in rows if row.rbo is not None and not math.isnan(row.rbo)]
    return Comparison(
        a=a, b=b, metrics=metrics, keywords=rows,
        only_a_count=len(keywords_a) - len(shared), only_b_count=len(keywords_b) - len(shared),
        rbo_k=rbo_k, mean_rbo=core.mean_over_keywords(rbos)[0],
    )


@dataclass(frozen=True)
class SideBySideRow:
    position: int
    a: SnapshotDetail | None
    b: SnapshotDetail | None
    a_in_b: bool
    b_in_a: bool

    @property
    def same(self) -> bool:
        """Both lists hold the same document at this position."""
        return (self.a is not None and self.b is not None
                and self.a.snapshot.doc_id == self.b.snapshot.doc_id)

    @property
    def cells(self) -> list[tuple[SnapshotDetail | None, bool]]:
        return [(self.a, self.a_in_b), (self.b, self.b_in_a)]


def keyword_side_by_side(*, a: Evaluation, b: Evaluation, normalized_text: str
                         ) -> tuple[Keyword | None, Keyword | None, list[SideBySideRow]]:
    """One keyword's two result lists position by position, each result with its slots."""
    keywords = {k.evaluation_id: k for k in Keyword.objects.filter(
        evaluation_id__in=[a.pk, b.pk], normalized_text=normalized_text)}
    keyword_a, keyword_b = keywords.get(a.pk), keywords.get(b.pk)
    lists = _snapshot_details([keyword.pk for keyword in keywords.values()])
    list_a = lists[keyword_a.pk] if keyword_a else []
    list_b = lists[keyword_b.pk] if keyword_b else []
    docs_a = {d.snapshot.doc_id for d in list_a}
    docs_b = {d.snapshot.doc_id for d in list_b}
    rows = []
    for index in range(max(len(list_a), len(list_b))):
        left = list_a[index] if index < len(list_a) else None
        right = list_b[index] if index < len(list_b) else None
        rows.append(SideBySideRow(
            position=index + 1, a=left, b=right,
            a_in_b=left is not None and left.snapshot.doc_id in docs_b,
            b_in_a=right is not None and right.snapshot.doc_id in docs_a,
        ))
    return keyword_a, keyword_b, rows


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
    ).select_related("model").order_by("started_at", "id")[:20])
    recent = list(Evaluation.objects.filter(
        team=team, status=Evaluation.Status.FINISHED, archived_at=None,
    ).select_related("model").order_by("-finished_at", "-id").prefetch_related(
        Prefetch("metric_configs", queryset=EvaluationMetric.objects.order_by("position", "id"))
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


def model_history(*, model: SearchModel) -> list[MetricHistory]:
    """Each metric's value over the model's finished evaluations, oldest first."""
    configs = EvaluationMetric.objects.filter(
        evaluation__model=model, evaluation__status=Evaluation.Status.FINISHED,
    ).select_related("evaluation").order_by("evaluation__finished_at", "evaluation_id",
                                            "position", "id")
    series: dict[MetricKey, list] = {}
    for config in configs:
        series.setdefault(metric_key(config), []).append(
            (config.evaluation, config.value, config.keyword_count))
    return [MetricHistory(key, metric_key_label(key), points) for key, points in series.items()]


# --- leaderboards --------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelStanding:
    model: SearchModel
    evaluation: Evaluation
    value: float | None  # mean over the shared keywords
    keyword_count: int  # shared keywords with a value
    stored_value: float | None  # the evaluation's own mean over all its keywords


@dataclass(frozen=True)
class ModelLeaderboard:
    choices: list[tuple[str, str]]  # (slug, label)
    chosen: str
    shared_keyword_count: int
    standings: list[ModelStanding]


def model_leaderboard(*, team: Team, metric: str = "") -> ModelLeaderboard:
    """Search models ranked by one metric over their latest finished evaluation that has it,
    each averaged over the keywords all those evaluations share (a fair race)."""
    configs = list(EvaluationMetric.objects.filter(
        evaluation__team=team, evaluation__status=Evaluation.Status.FINISHED,
        evaluation__archived_at=None,
    ).select_related("evaluation__model").order_by("-evaluation__finished_at", "-evaluation_id"))
    by_key: dict[str, list[EvaluationMetric]] = defaultdict(list)
    labels: dict[str, str] = {}
    for config in configs:
        slug = metric_key_slug(metric_key(config))
        by_key[slug].append(config)
        labels[slug] = metric_key_label(metric_key(config))
    choices = sorted(labels.items(), key=lambda item: item[1])
    chosen = metric if metric in by_key else (choices[0][0] if choices else "")
    latest: dict[int, EvaluationMetric] = {}
    for config in by_key.get(chosen, []):
        latest.setdefault(config.evaluation.model_id, config)
    values: dict[int, dict[str, float | None]] = defaultdict(dict)
    for metric_id, text, value in KeywordMetricValue.objects.filter(
            metric_id__in=[c.pk for c in latest.values()]
    ).values_list("metric_id", "keyword__normalized_text", "value"):
        values[metric_id][text] = value
    keyword_sets = [set(values[c.pk]) for c in latest.values()]
    shared = set.intersection(*keyword_sets) if keyword_sets else set()
    standings = []
    for config in latest.values():
        value, keyword_count = core.mean_over_keywords(values[config.pk][t] for t in shared)
        standings.append(ModelStanding(
            model=config.evaluation.model, evaluation=config.evaluation,
            value=value, keyword_count=keyword_count,
            stored_value=config.value,
        ))
    standings.sort(key=lambda s: (s.value is None, -(s.value or 0.0), s.model.name))
    return ModelLeaderboard(choices=choices, chosen=chosen, shared_keyword_count=len(shared),
                            standings=standings)


@dataclass(frozen=True)
class GraderStanding:
    username: str
    grades_given: int
    with_majority: int  # their grades on results where the three graders had a majority
    agreed: int  # ... of which matched that majority

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.with_majority if self.with_majority else None


def grader_leaderboard(*, team: Team) -> list[GraderStanding]:
    """Members ranked by grades given, with how often their grade matched the majority on
    results graded by three people (a result whose three grades all differ has no majority
    and is left out). Counting is done in SQL; the share is computed here."""
    given = dict(
        FeedbackSlot.objects.filter(evaluation__team=team, grade__isnull=False,
                                    user__isnull=False, reused_from__isnull=True)
        .values("user_id").annotate(n=Count("id")).values_list("user_id", "n")
    )
    table = connection.ops.quote_name(FeedbackSlot._meta.db_table)
    evaluations = connection.ops.quote_name(Evaluation._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT user_id, SUM(CASE WHEN same >= 1 THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN same >= 1 OR others_lo = others_hi THEN 1 ELSE 0 END) FROM ("
            "  SELECT s.id, s.user_id AS user_id, COUNT(o.id) AS others,"
            "   SUM(CASE WHEN o.grade = s.grade THEN 1 ELSE 0 END) AS same,"
            "   MIN(o.grade) AS others_lo, MAX(o.grade) AS others_hi"
            f"  FROM {table} s JOIN {evaluations} e ON e.id = s.evaluation_id"
            f"  JOIN {table} o ON o.snapshot_id = s.snapshot_id AND o.id <> s.id"
            "   AND o.grade IS NOT NULL"
            "  WHERE e.team_id = %s AND s.grade IS NOT NULL AND s.user_id IS NOT NULL"
            "   AND s.reused_from_id IS NULL"
            "  GROUP BY s.id, s.user_id) per_slot"
            " WHERE others = 2 GROUP BY user_id",
            [team.pk],
        )
        agreement = {user_id: (agreed, majority) for user_id, agreed, majority in
                     cursor.fetchall()}
    members = Membership.objects.filter(team=team).select_related("user")
    standings = [
        GraderStanding(
            username=m.user.username, grades_given=given.get(m.user_id, 0),
            agreed=int(agreement.get(m.user_id, (0, 0))[0] or 0),
            with_majority=int(agreement.get(m.user_id, (0, 0))[1] or 0),
        )
        for m in members
    ]
    standings.sort(key=lambda s: (-s.grades_given, s.username))
    return standings


def team_evaluations_for_picker(*, team_ids: Sequence[int]) -> QuerySet[Evaluation]:
    return Evaluation.objects.filter(team_id__in=team_ids, archived_at=None).select_related(
        "model").order_by("-created_at", "-id")
