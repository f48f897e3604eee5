"""The agreement panel of the evaluation dashboard: coverage, tie rate and Fleiss' kappa with
their readings and advice, from the recompute's counts (metrics.recompute.aggregates) or
counted in SQL, and metrics_engine statistics over them.
"""

import math
from collections import defaultdict
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import Count, Q

from evaluations.models import Evaluation, EvaluationMetric
from judgments.models import FeedbackSlot
from metrics import queries
from metrics.models import DashboardCount
from metrics.recompute import aggregates
from metrics_engine import statistics

# Below this share of graded slots the page warns that the values are provisional.
LOW_COVERAGE = 0.8
# Above this share of tied binary votes the page warns that ties are eating the metrics.
HIGH_TIE_RATE = 0.1


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
