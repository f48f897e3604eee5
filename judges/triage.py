"""Judge-human triage: the results of an evaluation where a judge and people disagree,
those whose answer moves the keyword's value most first.

Whose grades: a slot held by a judge account (`User.is_judge`) is the judge's; every
other graded slot is the people's (a slot without an account, copied from the team's
imported judgments, included), as in judges.calibration. A judge's grade stands in a slot
only when the judge counted as it wrote it (a shadow run writes none), and it keeps
counting in the values after that, so every judge's slot is in.

Shadow judges: a shadow run grades every result and writes no slot, so its answers are
read from the run's items (each judge's newest answer of a result, as judges.calibration
reads them). They are listed apart from the counting judges' grades: triage is where a
lead sees how a judge they do not trust yet disagrees with the people. A judge whose
account already holds a slot of the result is read from that slot only.

Disagreement: a result with at least one judge's grade (counting or shadow) and one
person's grade that are not all the same value.

Impact: the keyword's value of the evaluation's first configured metric with that result
answered the judges' way (its slots: the counting and shadow judges' grades) and the
people's way (the people's grades only, aggregated as the evaluation aggregates slots),
every other result of the keyword as graded; the absolute difference, computed by
metrics_engine as the recompute does. None when the metric is null either way or cannot be
computed (then `metric_error` says why).

The grades shown pass through the caller's GradeVisibility (searchtweak.access): the page
and API are a lead's, who sees everyone's, and a slot the caller may not see is not read;
shadow answers are read only by a caller who sees everyone's grades of the team.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db.models import F
from django.http import Http404

import metrics_engine as core
from evaluations.models import Evaluation, Keyword, Snapshot
from judges.models import JudgeRun, JudgeRunItem
from judgments.models import AdjudicatedAnswer, FeedbackSlot
from metrics.recompute.run import evaluation_scale, evaluation_transformers
from metrics.selectors import keyword_pool_others, metric_configs
from searchtweak.access import GradeVisibility


@dataclass(frozen=True)
class ShadowGrade:
    """A shadow run's answer: counted nowhere, shown so a lead can judge the judge."""

    judge_id: int
    judge: str
    grade: int


@dataclass(frozen=True)
class TriageRow:
    snapshot_id: int
    keyword_id: int
    keyword: str
    position: int
    doc_id: str
    judge_grades: list[int]
    people_grades: list[int]
    impact: float | None
    # The lead's earlier decision on this result, if any: (grade, gold).
    adjudicated_grade: int | None = None
    adjudicated_gold: bool = False
    shadow_grades: list[ShadowGrade] = field(default_factory=list)


class _Sides(NamedTuple):
    judges: list[int]  # the impact's judges' side: counting and shadow answers
    people: list[int]
    counting: list[int]  # the judges' slots only


@dataclass(frozen=True)
class Triage:
    evaluation_id: int
    metric_label: str  # "" when the evaluation has no metric configured
    rows: list[TriageRow] = field(default_factory=list)
    metric_error: str = ""


def triage_snapshot_get(*, evaluation: Evaluation, snapshot_id: int) -> Snapshot:
    """One result of the evaluation (its keyword loaded); 404 for another evaluation's."""
    snapshot = (Snapshot.objects.select_related("keyword")
                .filter(pk=snapshot_id, keyword__evaluation_id=evaluation.pk).first())
    if snapshot is None:
        raise Http404("No such result.")
    return snapshot


def evaluation_triage(*, evaluation: Evaluation, visibility: GradeVisibility) -> Triage:
    """The evaluation's disagreements, the largest impact first (None last), then by
    keyword and position."""
    grades: dict[int, list[tuple[int, bool]]] = defaultdict(list)  # snapshot: (grade, judge)
    for snapshot_id, grade, is_judge in (
            FeedbackSlot.objects.filter(visibility.slots(), evaluation=evaluation,
                                        grade__isnull=False)
            .order_by("snapshot_id", "index", "pk")
            .values_list("snapshot_id", "grade", "user__is_judge")):
        grades[snapshot_id].append((grade, bool(is_judge)))
    shadows = (_shadow_grades(evaluation)
               if visibility.sees_everyone(evaluation.team_id) else {})
    disagreeing = {}
    for snapshot_id, slot_grades in grades.items():
        judged = [grade for grade, is_judge in slot_grades if is_judge]
        people = [grade for grade, is_judge in slot_grades if not is_judge]
        shadowed = [shadow.grade for shadow in shadows.get(snapshot_id, [])]
        if (judged or shadowed) and people and len(set(judged + shadowed + people)) > 1:
            disagreeing[snapshot_id] = _Sides(judged + shadowed, people, judged)
    configs = metric_configs(evaluation.pk)
    config = configs[0] if configs else None
    label = core.metric_label(config.code, config.k, config.params) if config else ""
    if not disagreeing:
        return Triage(evaluation_id=evaluation.pk, metric_label=label)
    # Every result of the keywords with a disagreement: the value reads them all.
    keyword_ids = Snapshot.objects.filter(pk__in=list(disagreeing)).values("keyword_id")
    snapshots = list(Snapshot.objects.filter(keyword_id__in=keyword_ids)
                     .select_related("keyword").order_by("keyword_id", "position"))
    impacts, error = _impacts(evaluation, config, snapshots, grades, disagreeing)
    decided = {answer.snapshot_id: answer for answer in
               AdjudicatedAnswer.objects.filter(snapshot_id__in=list(disagreeing))}
    rows = [
        TriageRow(
            snapshot_id=snapshot.pk, keyword_id=snapshot.keyword_id,
            keyword=snapshot.keyword.text, position=snapshot.position, doc_id=snapshot.doc_id,
            judge_grades=disagreeing[snapshot.pk].counting,
            people_grades=disagreeing[snapshot.pk].people,
            shadow_grades=shadows.get(snapshot.pk, []), impact=impacts.get(snapshot.pk),
            adjudicated_grade=decided[snapshot.pk].grade if snapshot.pk in decided else None,
            adjudicated_gold=decided[snapshot.pk].gold if snapshot.pk in decided else False,
        )
        for snapshot in snapshots if snapshot.pk in disagreeing
    ]
    rows.sort(key=lambda row: (row.impact is None, -(row.impact or 0.0), row.keyword,
                               row.keyword_id, row.position))
    return Triage(evaluation_id=evaluation.pk, metric_label=label, rows=rows,
                  metric_error=error)


def _shadow_grades(evaluation: Evaluation) -> dict[int, list[ShadowGrade]]:
    """{snapshot id: each shadow judge's newest answer}, judges by name, leaving out a
    judge whose account holds a graded slot of that result (the slot is its grade)."""
    slotted = set(FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=False,
                                              user__is_judge=True)
                  .values_list("snapshot_id", "user_id"))
    newest: dict[tuple[int, int], ShadowGrade] = {}
    for snapshot_id, judge_id, user_id, name, grade in (
            JudgeRunItem.objects.filter(run__evaluation=evaluation,
                                        run__mode=JudgeRun.Mode.SHADOW,
                                        status=JudgeRunItem.Status.DONE, grade__isnull=False)
            .order_by(F("answered_at").asc(nulls_first=True), "pk")
            .values_list("snapshot_id", "run__judge_id", "run__judge__user_id",
                         "run__judge__name", "grade")):
        if (snapshot_id, user_id) not in slotted:
            newest[snapshot_id, judge_id] = ShadowGrade(judge_id, name, grade)  # newest wins
    found: dict[int, list[ShadowGrade]] = defaultdict(list)
    for (snapshot_id, _), shadow in sorted(newest.items(), key=lambda item: (
            item[0][0], item[1].judge, item[1].judge_id)):
        found[snapshot_id].append(shadow)
    return dict(found)


def _impacts(evaluation: Evaluation, config, snapshots: list[Snapshot],
             grades: dict[int, list[tuple[int, bool]]],
             disagreeing: dict[int, _Sides],
             ) -> tuple[dict[int, float | None], str]:
    """{snapshot id: impact} for the disagreeing results, and why none could be computed."""
    if config is None:
        return {}, ""
    by_keyword: dict[int, list[Snapshot]] = defaultdict(list)
    for snapshot in snapshots:
        by_keyword[snapshot.keyword_id].append(snapshot)
    impacts: dict[int, float | None] = {}
    try:
        scale = evaluation_scale(evaluation)
        transformers = evaluation_transformers(evaluation)
        reads_pool = core.config_reads_pool(config.code, config.params)
        for keyword_results in by_keyword.values():
            length = max(snapshot.position for snapshot in keyword_results)
            # Positions 1..length as the recompute lays them out: a missing one is empty.
            results: list[list[int]] = [[] for _ in range(length)]
            doc_ids: list[str] = [f"\0missing {index}" for index in range(length)]
            for snapshot in keyword_results:
                results[snapshot.position - 1] = [g for g, _ in grades.get(snapshot.pk, [])]
                doc_ids[snapshot.position - 1] = snapshot.doc_id
            pool = None
            if reads_pool:
                keyword: Keyword = keyword_results[0].keyword
                pool = keyword_pool_others(keyword=keyword, evaluation=evaluation)
            for snapshot in keyword_results:
                if snapshot.pk not in disagreeing:
                    continue
                values = []
                sides = disagreeing[snapshot.pk]
                for side in (sides.judges, sides.people):
                    answered = list(results)
                    answered[snapshot.position - 1] = side
                    values.append(core.evaluate_keyword(
                        config.code, answered, k=config.k, scale=scale, params=config.params,
                        transformers=transformers, pool=pool, doc_ids=doc_ids))
                judge_value, people_value = values
                impacts[snapshot.pk] = None if judge_value is None or people_value is None \
                    else abs(judge_value - people_value)
    except core.MetricInputError as error:
        return {}, str(error)
    return impacts, ""
