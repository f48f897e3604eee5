"""Grades learned from clicks, given as a judge gives them (docs/decisions/0024).

A clicks grader is a judges.Judge of provider "clicks" with a ClickGrader beside it. It
is run as any judge is (judges.runs.run_start: shadow first, counting modes only once it
counts), calibrated on the same page, held to the same trust bar; only its grading is
different: instead of lanes of HTTP calls, `click_run_grade` (registered with judges at
start-up) learns every pending item's grade at once from the grader's source and window
by COEC or PBM (behaviour.core.learned), and stores them as the lanes store answers:
on the run's items, and in counting modes in the judge's slots through
judgments.grading.judge_grades_write, the one grade-writing service. A result with fewer
impressions than the grader's minimum gets no grade: its item fails with
`few_impressions`. Each item's LearnedGrade records the model, window and evidence.
"""

from __future__ import annotations

import logging
from datetime import date, timedelta
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

import metrics_engine as core
from behaviour.core.click_models import ClickCounts
from behaviour.core.learned import cuts_problem, grades_from_relevance, learned_relevance
from behaviour.models import BehaviourSource, ClickGrader, LearnedGrade
from behaviour.selectors import pair_position_counts
from evaluations.models import Evaluation, Snapshot
from judges import queries as judge_queries
from judges.batch_claiming import COUNTING_MODES
from judges.batch_storing import finish_if_done
from judges.models import Judge, JudgeRun, JudgeRunItem
from judges.services import judge_local_create, judge_local_update, judge_name_problem
from judgments import grading
from metrics.recompute.run import evaluation_scale
from searchtweak import sql
from searchtweak.models import Team, User

logger = logging.getLogger(__name__)

Status, ItemStatus = JudgeRun.Status, JudgeRunItem.Status
MAX_MIN_IMPRESSIONS = 1_000_000
# The judge's slots are held only for the length of the grading transaction.
SLOT_LEASE = timedelta(minutes=5)


def _clean_cuts(cuts) -> list[float]:
    if cuts in (None, ""):
        return []
    if not isinstance(cuts, list) or not all(
            isinstance(cut, int | float) and not isinstance(cut, bool) for cut in cuts):
        raise ValidationError({"cuts": "Cut points are a list of numbers, e.g. [0.1, 0.2, 0.4]."})
    problem = cuts_problem(cuts, len(cuts) + 1)
    if problem:
        raise ValidationError({"cuts": problem})
    return [float(cut) for cut in cuts]


# What an edit may change: the judge's own columns and how it learns.
CHANGEABLE = ("name", "is_active", "tags", "source", "click_model", "start_on", "end_on",
              "min_impressions", "cuts")
_LEARNING = ("source", "click_model", "start_on", "end_on", "min_impressions", "cuts")


def _learning_problems(*, team: Team, source: BehaviourSource, click_model: str,
                       start_on: date | None, end_on: date | None, min_impressions: int,
                       cuts) -> tuple[dict[str, str], list[float]]:
    """Every bad setting of how a grader learns, by field, and the cuts as stored."""
    problems = {}
    if source.team_id != team.pk:
        problems["source"] = "This behaviour source belongs to another team."
    if click_model not in ClickGrader.Model.values:
        problems["click_model"] = f"Use one of {', '.join(ClickGrader.Model.values)}."
    if start_on and end_on and start_on > end_on:
        problems["end_on"] = "The window ends before it starts."
    if isinstance(min_impressions, bool) or not isinstance(min_impressions, int) \
            or not 1 <= min_impressions <= MAX_MIN_IMPRESSIONS:
        problems["min_impressions"] = f"A whole number from 1 to {MAX_MIN_IMPRESSIONS}."
    try:
        cuts = _clean_cuts(cuts)
    except ValidationError as error:
        problems.update({field: messages[0] for field, messages in error.message_dict.items()})
        cuts = []
    return problems, cuts


def click_grader_settings(*, source: BehaviourSource, click_model: str,
                          start_on: date | None, end_on: date | None, min_impressions: int,
                          cuts: list[float]) -> dict[str, Any]:
    """How a grader learns, as its judge's audit record lists it (JSON values)."""
    return {"source": source.pk, "click_model": click_model,
            "start_on": start_on.isoformat() if start_on else None,
            "end_on": end_on.isoformat() if end_on else None,
            "min_impressions": min_impressions, "cuts": list(cuts)}


@transaction.atomic
def click_grader_create(*, team: Team, by: User | None, name: str, source: BehaviourSource,
                        click_model: str, start_on: date | None = None,
                        end_on: date | None = None, min_impressions: int = 10,
                        cuts: list[float] | None = None, tags: list[str] | None = None
                        ) -> ClickGrader:
    """A judge of provider "clicks" (not counting: it shadows first) and how it learns.
    ValidationError naming the field; nothing is saved then."""
    problems, cuts = _learning_problems(team=team, source=source, click_model=click_model,
                                        start_on=start_on, end_on=end_on,
                                        min_impressions=min_impressions, cuts=cuts)
    if problems:
        raise ValidationError(problems)
    learning = {"source": source, "click_model": click_model, "start_on": start_on,
                "end_on": end_on, "min_impressions": min_impressions, "cuts": cuts}
    judge = judge_local_create(team=team, by=by, name=name, provider=Judge.Provider.CLICKS,
                               model=click_model, tags=tags,
                               settings=click_grader_settings(**learning))
    return ClickGrader.objects.create(judge=judge, **learning)


@transaction.atomic
def click_grader_update(*, grader: ClickGrader, by: User | None, **changes: Any
                        ) -> ClickGrader:
    """Change any of CHANGEABLE; what is not given keeps its value. The grades learned
    already keep theirs: each LearnedGrade holds the source, model, window and minimum it
    was learned with; the next run learns with the new ones. ValidationError naming every
    bad field, nothing saved then; one audit record (a judge changed) otherwise."""
    unknown = set(changes) - set(CHANGEABLE)
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "cannot be changed"})
    # Only the judge's and the grader's rows are locked, not the team's or the source's.
    judge = Judge.objects.select_for_update(of=("self",)).select_related("team").get(
        pk=grader.judge_id)
    grader = ClickGrader.objects.select_for_update(of=("self",)).select_related(
        "source").get(pk=grader.pk)
    learning = {key: changes.get(key, getattr(grader, key)) for key in _LEARNING}
    before = click_grader_settings(**{key: getattr(grader, key) for key in _LEARNING})
    problems, learning["cuts"] = _learning_problems(team=judge.team, **learning)
    name = changes.get("name", judge.name)
    if problem := judge_name_problem(team=judge.team, judge=judge,
                                     name=name.strip() if isinstance(name, str) else ""):
        problems["name"] = problem
    if problems:
        raise ValidationError(problems)
    for key, value in learning.items():
        setattr(grader, key, value)
    grader.save(update_fields=list(_LEARNING))
    grader.judge = judge_local_update(
        judge=judge, by=by, name=name, is_active=changes.get("is_active", judge.is_active),
        tags=changes.get("tags", judge.tags), model=grader.click_model,
        settings_before=before, settings_after=click_grader_settings(**learning))
    return grader


def _fit(grader: ClickGrader, keywords: list[str]
         ) -> tuple[dict[tuple[str, str], int], ClickCounts, np.ndarray]:
    """The grader's click model fitted on these keywords' counts in its window: each
    (keyword, doc id)'s index, the counts and the learned relevance (NaN: no grade)."""
    rows = pair_position_counts(source=grader.source, keywords=keywords,
                                start_on=grader.start_on, end_on=grader.end_on)
    index: dict[tuple[str, str], int] = {}
    pairs = [index.setdefault((keyword, doc_id), len(index))
             for keyword, doc_id, _position, _shown, _clicked in rows]
    counts = ClickCounts.from_rows(pairs, [row[2] for row in rows], [row[3] for row in rows],
                                   [row[4] for row in rows], pair_count=len(index))
    return index, counts, learned_relevance(counts, model=grader.click_model,
                                            min_impressions=grader.min_impressions)


def gradable_pair_count(*, judge: Judge, evaluation: Evaluation,
                        pairs: list[tuple[int, int]]) -> int:
    """How many of these (snapshot id, keyword id) pairs a run of this clicks judge would
    grade now: the model fitted as the run fits it (the same keywords, window and
    minimum), counting the pairs it learns a relevance for. The rest would fail as "few
    impressions". Read-only: the run estimate's figure (judges.estimates)."""
    wanted = {snapshot_id for snapshot_id, _keyword_id in pairs}
    found = [(doc_id, keyword) for pk, doc_id, keyword in Snapshot.objects.filter(
        keyword__evaluation=evaluation).values_list("pk", "doc_id", "keyword__normalized_text")
        if pk in wanted]
    if not found:
        return 0
    index, _counts, relevance = _fit(judge.click_grader,
                                     sorted({keyword for _doc, keyword in found}))
    return sum(1 for doc_id, keyword in found
               if (pair := index.get((keyword, doc_id))) is not None
               and not np.isnan(relevance[pair]))


def _learn(grader: ClickGrader, items: list[tuple], scale: core.Scale
           ) -> dict[int, tuple[int, int, float | None, int | None]]:
    """{item id: (impressions, clicks, relevance or None, grade or None)}."""
    index, counts, relevance = _fit(
        grader, sorted({keyword for _pk, _snapshot, _doc, keyword in items}))
    grades = grades_from_relevance(relevance, lo=scale.lo, hi=scale.hi,
                                   cuts=grader.cuts or None)
    impressions, clicks = counts.pair_impressions(), counts.pair_clicks()
    learned = {}
    for pk, _snapshot, doc_id, keyword in items:
        pair = index.get((keyword, doc_id))
        if pair is None:
            learned[pk] = (0, 0, None, None)
            continue
        value = float(relevance[pair])
        learned[pk] = (int(impressions[pair]), int(clicks[pair]),
                       None if np.isnan(value) else value, grades[pair])
    return learned


def _pause(run_id: int, reason: str) -> None:
    JudgeRun.objects.filter(pk=run_id, status=Status.RUNNING).update(
        status=Status.PAUSED, pause_reason=reason)


def click_run_grade(*, run_id: int) -> int:
    """Learn and store the grade of every pending item of a running clicks run, then
    finish it; how many items were graded. A run not running is left alone; a run whose
    grader's cuts do not fit the evaluation's scale, or whose judge no longer counts (a
    counting mode), or whose evaluation takes no grades, pauses with the reason."""
    run = (JudgeRun.objects.select_related("judge__click_grader__source", "evaluation")
           .filter(pk=run_id, status=Status.RUNNING).first())
    if run is None:
        return 0
    grader = run.judge.click_grader
    scale = core.resolve_scale(evaluation_scale(run.evaluation))
    problem = cuts_problem(grader.cuts, scale.hi - scale.lo + 1) if grader.cuts else ""
    if problem:
        _pause(run.pk, f"The grader's cut points do not fit {scale.describe()}: {problem}")
        return 0
    items = list(JudgeRunItem.objects.filter(run=run, status=ItemStatus.PENDING).values_list(
        "pk", "snapshot_id", "snapshot__doc_id", "keyword__normalized_text"))
    learned = _learn(grader, items, scale)
    with transaction.atomic():
        if not JudgeRun.objects.select_for_update().filter(pk=run.pk,
                                                           status=Status.RUNNING).exists():
            return 0
        pending = set(JudgeRunItem.objects.select_for_update().filter(
            pk__in=[item[0] for item in items], status=ItemStatus.PENDING)
            .values_list("pk", flat=True))
        items = [item for item in items if item[0] in pending]
        written = _slots_write(run, grader, items, learned)
        if written is None:
            return 0
        return _items_store(run, grader, items, learned, written)


def _reason(grader: ClickGrader, impressions: int, clicks: int, relevance: float,
            grade: int) -> str:
    return (f"{grader.get_click_model_display()} from {grader.source.name} "
            f"({grader.window_text}): {clicks} clicks in {impressions} impressions, "
            f"estimated click-through at position 1 {relevance:.3f} → grade {grade}.")


def _slots_write(run: JudgeRun, grader: ClickGrader, items: list[tuple],
                 learned: dict) -> set[int] | None:
    """Counting modes: the learned grades into the judge's slots, as a lane writes an
    answer; the snapshots written, or None when the run paused instead."""
    graded = [(snapshot_id, learned[pk]) for pk, snapshot_id, _doc, _kw in items
              if learned[pk][3] is not None]
    if run.mode not in COUNTING_MODES or not graded:
        return set()
    if not judge_queries.judge_counts_locked(judge_id=run.judge_id):
        _pause(run.pk, f"{run.judge.name} no longer counts (an admin took its trust back): "
                       "run it in shadow mode, or let it count again, to go on.")
        return None
    now = timezone.now()
    user = run.judge.user
    held = grading.judge_slots_claim(judge_user=user, snapshot_ids=[s for s, _ in graded],
                                     now=now, lease_until=now + SLOT_LEASE)
    try:
        return grading.judge_grades_write(
            judge_user=user, evaluation=run.evaluation, now=now,
            grades=[(snapshot_id, grade, _reason(grader, shown, clicked, relevance, grade))
                    for snapshot_id, (shown, clicked, relevance, grade) in graded
                    if snapshot_id in held])
    except ValidationError as error:
        grading.judge_slots_release(judge_user=user, snapshot_ids=list(held))
        _pause(run.pk, " ".join(error.messages))
        return None


def _items_store(run: JudgeRun, grader: ClickGrader, items: list[tuple], learned: dict,
                 written: set[int]) -> int:
    now = timezone.now()
    rows, evidence = [], []
    done = failed = skipped = 0
    for pk, snapshot_id, _doc, _kw in items:
        shown, clicked, relevance, grade = learned[pk]
        if grade is None:
            status, failure, reason = ItemStatus.FAILED, "few_impressions", ""
            detail = (f"No grade: {shown} impressions in the window; the grader asks for at "
                      f"least {grader.min_impressions}.")
            failed += 1
        elif run.mode in COUNTING_MODES and snapshot_id not in written:
            status, failure, reason = ItemStatus.SKIPPED, "taken", ""
            detail = "a person graded it first"
            grade = None
            skipped += 1
        else:
            status, failure, detail = ItemStatus.DONE, "", ""
            reason = _reason(grader, shown, clicked, relevance, grade)
            done += 1
        rows.append((pk, status, grade, reason, failure, detail))
        evidence.append(LearnedGrade(
            item_id=pk, source=grader.source, click_model=grader.click_model,
            start_on=grader.start_on, end_on=grader.end_on,
            min_impressions=grader.min_impressions, impressions=shown, clicks=clicked,
            relevance=relevance, grade=learned[pk][3]))
    sql.rows_update(JudgeRunItem, fields=["status", "grade", "reason", "failure",
                                          "failure_detail"],
                    rows=rows, constants={"answered_at": now, "lease_expires_at": None})
    # A retried item is learned again: its newest evidence replaces the old.
    LearnedGrade.objects.filter(item_id__in=[row[0] for row in rows]).delete()
    LearnedGrade.objects.bulk_create(evidence)
    JudgeRun.objects.filter(pk=run.pk).update(
        done_count=F("done_count") + done, failed_count=F("failed_count") + failed,
        skipped_count=F("skipped_count") + skipped)
    finish_if_done(run)
    logger.info("clicks run %s: %s graded, %s without enough impressions, %s taken",
                run.pk, done, failed, skipped)
    return done
