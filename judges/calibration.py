"""Calibration before trust: how a judge's grades agree with the people's on one evaluation,
and what the evaluation's metrics would be with the judge's grades instead of theirs.

Whose grades:
- the judge's grade of a snapshot is the newest answered item of any of its runs on the
  evaluation (shadow runs included: they exist for this), else the grade its account left
  in a slot;
- the people's grades are the evaluation's graded slots not held by a judge account
  (another judge's grades never calibrate this one).

Pairs: a snapshot graded by the judge and by several people gives one pair per person
(judge x each person). κ, the exact-match rate and the confusion matrix count those pairs,
so a result three people graded weighs three times and the people's own disagreement
shows as disagreement, instead of being hidden in a rounded mean.

κ: unweighted on a two-grade scale (binary), quadratic-weighted on a longer ordinal one
(graded, detail, an admin's scale): being one grade off is a smaller miss than three. The
statistics are metrics_engine.agreement's; nothing here re-implements them.

By shown position: the same pairs grouped by where the *person* was shown the result
(FeedbackSlot.shown_position: 1..10 each, then "11+"; people's grades written before it was
recorded, or copied from elsewhere, under "not recorded"). The judge saw each result alone,
so its grade does not depend on that position; when the people's agreement with it falls
or rises with the position they saw, the people's grades carry a position bias. In a
shuffled evaluation (Evaluation.shuffle_results) the shown position is independent of the
engine's rank, so the effect is not confounded with results simply getting worse lower down.

Metrics: per configured metric, its value per keyword from the people's grades (their
slots aggregated per snapshot as the evaluation aggregates them) and from the judge's
(its one grade per snapshot), computed by metrics_engine like the recompute does, over the
keywords both graded something of; then the mean delta (judge - people) and Spearman's and
Kendall's rank correlation over the keywords where both values exist.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import F, Max, Q, QuerySet

import metrics_engine as core
from evaluations.models import Evaluation, Keyword, Snapshot
from judges.models import Judge, JudgeRun, JudgeRunItem
from judgments.models import FeedbackSlot
from metrics.recompute.run import evaluation_scale, evaluation_transformers
from metrics.selectors import keyword_pool_others, metric_configs
from metrics_engine.agreement import correlation_warning, grade_agreement, metric_agreement


@dataclass(frozen=True)
class MetricCalibration:
    """One configured metric with the people's grades and with the judge's."""

    metric_id: int
    label: str
    keyword_count: int  # keywords where both values exist
    human_mean: float | None
    judge_mean: float | None
    mean_delta: float | None  # mean(judge - people) over those keywords
    spearman: float | None
    kendall: float | None
    error: str = ""  # the metric could not be computed (a missing transformer...)

    @property
    def correlation_warning(self) -> str:
        """Set when too few keywords make Spearman and Kendall mostly chance."""
        return correlation_warning(self.keyword_count)


# Shown positions 1..POSITION_ROWS get a row each; later ones share "POSITION_ROWS+1 +".
POSITION_ROWS = 10


@dataclass(frozen=True)
class PositionAgreement:
    """The judge x person pairs where the person was shown the result at these positions."""

    label: str  # "1".."10", "11+" or "not recorded"
    pair_count: int
    exact_match_count: int
    mean_difference: float | None  # mean(person's grade - judge's) over the pairs

    @property
    def exact_match_rate(self) -> float | None:
        return self.exact_match_count / self.pair_count if self.pair_count else None


@dataclass(frozen=True)
class Calibration:
    judge_id: int
    evaluation_id: int
    scale: core.Scale
    judge_snapshot_count: int  # snapshots the judge graded
    snapshot_count: int  # ... that people graded too
    pair_count: int  # judge x person pairs on those snapshots
    exact_match_rate: float | None
    kappa: float | None  # weighted as `kappa_weighting` says
    kappa_weighting: str  # "none" (two grades) or "quadratic"
    unweighted_kappa: float | None
    confusion: list[list[int]]  # rows: the person's grade, columns: the judge's
    metrics: list[MetricCalibration]
    by_position: list[PositionAgreement]  # rows with pairs, in position order

    @property
    def grades(self) -> list[int]:
        """The confusion matrix's row and column headings, in the scale's order."""
        return list(self.scale.grades)

    @property
    def grade_labels(self) -> list[tuple[int, str]]:
        return [(grade, self.scale.labels.get(grade, "")) for grade in self.scale.grades]

    @property
    def confusion_rows(self) -> list[tuple[tuple[int, str], list[int]]]:
        """((grade, label), the judge's grades' counts) for each of the people's grades."""
        return list(zip(self.grade_labels, self.confusion, strict=True))


# --- reads ---------------------------------------------------------------------------------


def calibration_evaluations(*, judge: Judge) -> QuerySet[Evaluation]:
    """The judge's team's evaluations it has a finished run on, newest run first."""
    done = Q(judge_runs__judge=judge, judge_runs__status=JudgeRun.Status.DONE)
    return (Evaluation.objects.filter(team_id=judge.team_id)
            .annotate(last_run_at=Max("judge_runs__created_at", filter=done))
            .filter(last_run_at__isnull=False).order_by("-last_run_at", "-pk"))


def judge_grades(*, judge: Judge, evaluation: Evaluation) -> dict[int, int]:
    """{snapshot id: the judge's grade}: its account's slots, overridden by its runs'
    answers, the newest last."""
    grades = dict(FeedbackSlot.objects.filter(
        evaluation=evaluation, user_id=judge.user_id, grade__isnull=False,
    ).values_list("snapshot_id", "grade"))
    answers = (JudgeRunItem.objects.filter(run__judge=judge, run__evaluation=evaluation,
                                           status=JudgeRunItem.Status.DONE, grade__isnull=False)
               .order_by(F("answered_at").asc(nulls_first=True), "pk")
               .values_list("snapshot_id", "grade"))
    grades.update(answers)  # later rows win: the newest answer
    return grades


def human_grades(*, evaluation: Evaluation) -> dict[int, list[int]]:
    """{snapshot id: the people's grades}, slot order. A slot without an account (a grade
    copied from the team's imported judgments) counts as people's: no judge gave it."""
    return {snapshot_id: [grade for grade, _ in shown]
            for snapshot_id, shown in human_grades_shown(evaluation=evaluation).items()}


def human_grades_shown(*, evaluation: Evaluation) -> dict[int, list[tuple[int, int | None]]]:
    """human_grades with where each person was shown the result: {snapshot id: [(grade,
    shown position or None)]}."""
    grades: dict[int, list[tuple[int, int | None]]] = defaultdict(list)
    for snapshot_id, grade, shown in (FeedbackSlot.objects.filter(evaluation=evaluation,
                                                                  grade__isnull=False)
                                      .exclude(user__is_judge=True)
                                      .order_by("snapshot_id", "index")
                                      .values_list("snapshot_id", "grade", "shown_position")):
        grades[snapshot_id].append((grade, shown))
    return dict(grades)


def judge_calibration(*, judge: Judge, evaluation: Evaluation) -> Calibration:
    scale = core.resolve_scale(evaluation_scale(evaluation))
    judged = judge_grades(judge=judge, evaluation=evaluation)
    shown = human_grades_shown(evaluation=evaluation)
    people = {pk: [grade for grade, _ in grades] for pk, grades in shown.items()}
    human_column, judge_column = grade_pairs(judged, people, scale=scale)
    agreement = grade_agreement(human_column, judge_column, grades=list(scale.grades))
    weighting = "quadratic" if len(scale.grades) > 2 else "none"
    return Calibration(
        judge_id=judge.pk, evaluation_id=evaluation.pk, scale=scale,
        judge_snapshot_count=len(judged),
        snapshot_count=sum(1 for pk in judged if people.get(pk)),
        pair_count=agreement.pair_count,
        exact_match_rate=agreement.exact_match_rate,
        kappa=agreement.quadratic_kappa if weighting == "quadratic" else agreement.kappa,
        kappa_weighting=weighting, unweighted_kappa=agreement.kappa,
        confusion=agreement.confusion,
        metrics=_metric_calibrations(evaluation, people, judged, scale=scale),
        by_position=position_agreement(judged, shown, scale=scale),
    )


# --- the pure part -------------------------------------------------------------------------


def grade_pairs(judged: dict[int, int], people: dict[int, list[int]], *,
                scale: core.Scale) -> tuple[list[int], list[int]]:
    """(people's grades, the judge's) as two columns, one row per judge x person pair.
    A grade outside the scale (the scale was edited since) takes no part."""
    human_column: list[int] = []
    judge_column: list[int] = []
    for snapshot_id, judge_grade in judged.items():
        if not scale.contains(judge_grade):
            continue
        for human_grade in people.get(snapshot_id, []):
            if scale.contains(human_grade):
                human_column.append(human_grade)
                judge_column.append(judge_grade)
    return human_column, judge_column


def position_agreement(judged: dict[int, int],
                       shown: dict[int, list[tuple[int, int | None]]], *,
                       scale: core.Scale) -> list[PositionAgreement]:
    """grade_pairs' pairs grouped by the person's shown position (1..POSITION_ROWS, then
    the rest, then "not recorded"), each group's exact matches and mean(person - judge);
    only groups with pairs."""
    groups: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for snapshot_id, judge_grade in judged.items():
        if not scale.contains(judge_grade):
            continue
        for human_grade, position in shown.get(snapshot_id, []):
            if scale.contains(human_grade):
                row = POSITION_ROWS + 2 if position is None else min(position, POSITION_ROWS + 1)
                groups[row].append((human_grade, judge_grade))
    rows = []
    for row in sorted(groups):
        pairs = groups[row]
        label = ("not recorded" if row == POSITION_ROWS + 2
                 else f"{row}+" if row == POSITION_ROWS + 1 else str(row))
        rows.append(PositionAgreement(
            label=label, pair_count=len(pairs),
            exact_match_count=sum(1 for human, judge in pairs if human == judge),
            mean_difference=sum(human - judge for human, judge in pairs) / len(pairs)))
    return rows


def _metric_calibrations(evaluation: Evaluation, people: dict[int, list[int]],
                         judged: dict[int, int], *, scale: core.Scale,
                         ) -> list[MetricCalibration]:
    configs = metric_configs(evaluation.pk)
    if not configs:
        return []
    results: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for snapshot_id, keyword_id, doc_id in (Snapshot.objects.filter(keyword__evaluation=evaluation)
                                            .order_by("keyword_id", "position")
                                            .values_list("pk", "keyword_id", "doc_id")):
        results[keyword_id].append((snapshot_id, doc_id))
    # Keywords both graded something of; a keyword one side never touched says nothing.
    keyword_ids = [keyword_id for keyword_id, snapshots in results.items()
                   if any(pk in judged for pk, _ in snapshots)
                   and any(people.get(pk) for pk, _ in snapshots)]
    inputs = {
        "human": [[people.get(pk, []) for pk, _ in results[kw]] for kw in keyword_ids],
        "judge": [[[judged[pk]] if pk in judged else [] for pk, _ in results[kw]]
                  for kw in keyword_ids],
    }
    doc_ids = [[doc_id for _, doc_id in results[kw]] for kw in keyword_ids]
    pools = _pools(evaluation, configs, keyword_ids)
    transformers = evaluation_transformers(evaluation)
    rows = []
    for config in configs:
        label = core.metric_label(config.code, config.k, config.params)
        try:
            values = {
                side: core.evaluate_keywords(
                    config.code, lists, k=config.k, scale=scale, params=config.params,
                    transformers=transformers, pools=pools, doc_ids=doc_ids,
                ) if keyword_ids else []
                for side, lists in inputs.items()
            }
        except core.MetricInputError as error:
            rows.append(MetricCalibration(config.pk, label, 0, None, None, None, None, None,
                                          error=str(error)))
            continue
        rows.append(metric_calibration(
            config.pk, label,
            human=dict(zip(keyword_ids, values["human"], strict=True)),
            judge=dict(zip(keyword_ids, values["judge"], strict=True)),
        ))
    return rows


def _pools(evaluation: Evaluation, configs, keyword_ids: list[int]) -> list | None:
    """Each keyword's pool from the team's other evaluations, when a metric reads it: the
    same pool on both sides, so only this evaluation's grades differ."""
    if not any(core.config_reads_pool(c.code, c.params) for c in configs):
        return None
    keywords = Keyword.objects.in_bulk(keyword_ids)
    return [keyword_pool_others(keyword=keywords[kw], evaluation=evaluation)
            for kw in keyword_ids]


def metric_calibration(metric_id: int, label: str, *, human: dict, judge: dict,
                       ) -> MetricCalibration:
    """One metric's values per keyword (NaN or None = null) with the people's grades and
    with the judge's, summed up over the keywords where both exist."""
    agreement = metric_agreement(human, judge)
    common = [key for key in human if key in judge
              and _present(human[key]) and _present(judge[key])]
    human_mean, _ = core.mean_over_keywords(human[key] for key in common)
    judge_mean, _ = core.mean_over_keywords(judge[key] for key in common)
    return MetricCalibration(
        metric_id=metric_id, label=label, keyword_count=agreement.keyword_count,
        human_mean=human_mean, judge_mean=judge_mean, mean_delta=agreement.mean_delta,
        spearman=agreement.spearman, kendall=agreement.kendall,
    )


def _present(value) -> bool:
    return value is not None and value == value  # NaN is not equal to itself
