"""Every write of the judgments app: slots, scales, transformers, grader tags, the pool.

Grades are written by judgments.grading alone and the queue lives in judgments.queue;
their services are re-exported here for callers that import them from this module.
"""

import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword, Snapshot
from evaluations.services.config_checks import MissingTransformerError, metrics_transformers_check
from evaluations.strategies import strategy_slot_counts
from judgments import scales as scale_lookup
from judgments.grading import (  # noqa: F401  re-exported
    feedback_submit,
    gold_probe_grade,
    keywords_mark_dirty,
    slot_grade_by_lead,
    slot_reset,
    slots_reuse_fill,
    snapshot_grade,
    snapshot_grade_and_claim_next,
)
from judgments.models import (
    FeedbackSlot,
    GraderTags,
    PoolImportUpload,
    PoolJudgment,
    Scale,
    Transformer,
)
from judgments.queue import (  # noqa: F401  re-exported
    LEASE,
    SlotConflict,
    slot_claim_next,
    slot_claim_next_assigned,
    slot_skip,
)
from searchtweak.bulk_insert import bulk_insert_rows
from searchtweak.models import Team, User

# --- slots ---


def slots_create_for_snapshots(
    *, evaluation: Evaluation, keyword: Keyword, snapshots: Sequence[Snapshot]
) -> int:
    """slots_create_for_keywords for one keyword."""
    return slots_create_for_keywords(evaluation=evaluation,
                                     snapshots_by_keyword={keyword: snapshots})


@transaction.atomic
def slots_create_for_keywords(
    *, evaluation: Evaluation, snapshots_by_keyword: Mapping[Keyword, Sequence[Snapshot]]
) -> int:
    """Create the evaluation's `strategy` empty slots for each saved snapshot (one under
    "1 → 3": judgments.adaptive opens more), then fill them with earlier grades when the
    evaluation reuses them. All the keywords' slots go in one COPY on PostgreSQL
    (searchtweak.bulk_insert), however many keywords a fetch stores at once; how many
    slots. (COPY returns no ids, and no caller needs the slots' own.)"""
    opened = strategy_slot_counts(evaluation.strategy)[0]
    # Rows, not instances: nothing reads the new slots back, and a FeedbackSlot per row
    # cost more than copying it (a fetch of 100,000 keywords opens a million or more).
    created = bulk_insert_rows(
        FeedbackSlot(evaluation=evaluation),
        ["snapshot_id", "keyword_id", "index", "keyword_position", "position"],
        ((snapshot.pk, keyword.pk, index, keyword.position, snapshot.position)
         for keyword, snapshots in snapshots_by_keyword.items()
         for snapshot in snapshots
         for index in range(opened)))
    if evaluation.reuse_grades != Evaluation.Reuse.NONE:
        for keyword, snapshots in snapshots_by_keyword.items():
            if snapshots:
                slots_reuse_fill(evaluation=evaluation, keyword=keyword, snapshots=snapshots)
    return created


# --- scales, transformers, grader tags (admins) ---


def _scale_codes_in_use(team: Team, code: str) -> bool:
    return Evaluation.objects.filter(team=team, scale=code).exists()


def _check_scale(*, team: Team, code: str, lo: int, hi: int, labels: dict) -> None:
    if code in core.SCALES:
        raise ValidationError({"code": f"{code!r} is a built-in scale."})
    if "->" in code:
        raise ValidationError({"code": "A scale code may not contain '->'."})
    if lo < 0 or hi > scale_lookup.MAX_GRADE:
        raise ValidationError({"hi": "Grades must lie within 0..10 (one digit key each)."})
    if hi <= lo:
        raise ValidationError({"hi": "The highest grade must be above the lowest."})
    if hi - lo > 9:
        raise ValidationError({"hi": "A scale has at most ten grades (one digit key each)."})
    missing = [g for g in range(lo, hi + 1) if str(g) not in labels]
    if missing:
        raise ValidationError({"labels": f"Grade {missing[0]} has no label."})
    extra = [g for g in labels if not (lo <= int(g) <= hi)]
    if extra:
        raise ValidationError({"labels": f"Grade {extra[0]} is outside {lo}..{hi}."})


@transaction.atomic
def scale_create(
    *, team: Team, code: str, name: str, lo: int, hi: int, labels: dict[str, dict]
) -> Scale:
    _check_scale(team=team, code=code, lo=lo, hi=hi, labels=labels)
    if Scale.objects.filter(team=team, code=code).exists():
        raise ValidationError({"code": f"The team already has a scale {code!r}."})
    return Scale.objects.create(team=team, code=code, name=name, lo=lo, hi=hi, labels=labels)


@transaction.atomic
def scale_update(*, scale: Scale, name: str, lo: int, hi: int, labels: dict[str, dict]) -> Scale:
    """Names, labels and colours may always change; the range only while no evaluation
    uses the scale (its grades would fall outside)."""
    _check_scale(team=scale.team, code=scale.code, lo=lo, hi=hi, labels=labels)
    if (lo, hi) != (scale.lo, scale.hi) and _scale_codes_in_use(scale.team, scale.code):
        raise ValidationError({"hi": "Evaluations use this scale: its range cannot change."})
    if (lo, hi) != (scale.lo, scale.hi):
        # Their mappings name the old grades; a recompute would read them as they stand.
        naming = Transformer.objects.filter(team=scale.team).filter(
            Q(source=scale.code) | Q(target=scale.code)).first()
        if naming is not None:
            raise ValidationError({"hi": f"The transformer {naming} maps this scale's grades: "
                                   "delete it before changing the range."})
    scale.name, scale.lo, scale.hi, scale.labels = name, lo, hi, labels
    scale.save(update_fields=["name", "lo", "hi", "labels"])
    return scale


@transaction.atomic
def scale_delete(*, scale: Scale) -> None:
    if _scale_codes_in_use(scale.team, scale.code):
        raise ValidationError({"code": "Evaluations use this scale: it cannot be deleted."})
    Transformer.objects.filter(team=scale.team).filter(
        Q(source=scale.code) | Q(target=scale.code)).delete()
    scale.delete()


@transaction.atomic
def transformer_save(
    *, team: Team, source: str, target: str, mapping: dict[Any, Any]
) -> Transformer:
    """Create or replace the team's transformer source → target after validating that it
    maps every source grade to a target grade."""
    src = scale_lookup.scale_for_team(team_id=team.pk, code=source)
    dst = scale_lookup.scale_for_team(team_id=team.pk, code=target)
    if src is None:
        raise ValidationError({"source": f"Unknown scale {source!r}."})
    if dst is None:
        raise ValidationError({"target": f"Unknown scale {target!r}."})
    if source == target:
        raise ValidationError({"target": "Choose a scale other than the source."})
    try:
        parsed = core.validate_transformer(mapping, src.core_scale(), dst.core_scale())
    except core.MetricInputError as error:
        raise ValidationError({"mapping": error.problem}) from error
    stored = {str(k): v for k, v in sorted(parsed.items())}
    transformer, _ = Transformer.objects.update_or_create(
        team=team, source=source, target=target,
        defaults={"mapping": stored, "updated_at": timezone.now()},
    )
    return transformer


@transaction.atomic
def transformer_delete(*, transformer: Transformer) -> None:
    """Delete a transformer no metric needs: the default (if any) applies again. One that
    an evaluation's metric reads with no default behind it is refused (on `transformer`),
    since every recompute of that evaluation would fail without it."""
    transformer.delete()
    source = scale_lookup.scale_for_team(team_id=transformer.team_id, code=transformer.source)
    if source is None or source.builtin:
        return  # the built-ins map to each other by default
    evaluations = Evaluation.objects.filter(
        team_id=transformer.team_id, scale=transformer.source).prefetch_related("metric_configs")
    for evaluation in evaluations:
        try:
            metrics_transformers_check(
                team=transformer.team, scale=source.core_scale(),
                metrics=[{"code": m.code, "k": m.k, "params": m.params}
                         for m in evaluation.metric_configs.all()],
                transformers=evaluation.transformers)
        except MissingTransformerError:
            raise ValidationError({"transformer": (
                f"Evaluation “{evaluation.name}” reads grades through {transformer}, and "
                f"{transformer.target} has no default from {source.name}: its metrics "
                "could not be computed without it.")}) from None


def normalize_tags(tags: Iterable[str]) -> list[str]:
    return sorted({tag.strip().lower() for tag in tags if tag and tag.strip()})


@transaction.atomic
def grader_tags_set(*, team: Team, user: User, tags: Iterable[str]) -> GraderTags:
    if not user.memberships.filter(team=team).exists():
        raise ValidationError({"user": "Not a member of this team."})
    row, _ = GraderTags.objects.update_or_create(
        team=team, user=user, defaults={"tags": normalize_tags(tags), "updated_at": timezone.now()}
    )
    return row


# --- the team's judgment pool (imports) ---


def _pool_keyword_ids(*, team: Team, scale: str, texts: set[str]) -> list[int]:
    """Keywords of the team with one of these texts whose evaluation is on `scale` and
    configures a pool metric: their values depend on the pool."""
    if not texts:
        return []
    evaluation_ids = set()
    for config in EvaluationMetric.objects.filter(
        evaluation__team=team, evaluation__scale=scale
    ).only("evaluation_id", "code", "params"):
        if core.config_reads_pool(config.code, config.params):
            evaluation_ids.add(config.evaluation_id)
    if not evaluation_ids:
        return []
    return list(Keyword.objects.filter(
        evaluation_id__in=evaluation_ids, normalized_text__in=texts
    ).values_list("pk", flat=True))


def _pool_slots_repoint(*, team: Team, scale: str, stale: list[int]) -> None:
    """Point slots that copied a pool row about to be replaced at a new row of the same
    (text, document): one with the same grade when there is one, else the first.

    A reused grade is a copy taken when the slot was made (grades reused from earlier
    evaluations do not follow later re-grades either, and a finished evaluation's grades
    never change), so the slot keeps its grade; but it must keep a source, or deleting
    the old row (SET_NULL) would leave a graded slot with neither grader nor source,
    which slot_grade_has_a_grader rejects. Every replaced pair has new rows: a row is
    replaced only by the same pair in the new file.
    """
    affected = []
    for start in range(0, len(stale), 2000):
        affected += FeedbackSlot.objects.filter(
            reused_from_pool_id__in=stale[start:start + 2000]
        ).values_list("pk", "grade", "reused_from_pool__normalized_text",
                      "reused_from_pool__doc_id")
    if not affected:
        return
    replacements: dict[tuple[str, str], list[tuple[int, int]]] = {}
    fresh = PoolJudgment.objects.filter(
        team=team, scale=scale, normalized_text__in={text for _, _, text, _ in affected},
    ).exclude(pk__in=stale).order_by("pk")
    for pk, text, doc_id, grade in fresh.values_list("pk", "normalized_text", "doc_id",
                                                     "grade"):
        replacements.setdefault((text, doc_id), []).append((pk, grade))
    updates = []
    for slot_id, grade, text, doc_id in affected:
        candidates = replacements[(text, doc_id)]
        row_id = next((pk for pk, g in candidates if g == grade), candidates[0][0])
        updates.append(FeedbackSlot(pk=slot_id, reused_from_pool_id=row_id))
    FeedbackSlot.objects.bulk_update(updates, ["reused_from_pool"], batch_size=2000)


@transaction.atomic
def pool_judgments_import(
    *, team: Team, scale: str, judgments: Sequence[Any], source: str, user: User | None
) -> dict[str, int]:
    """Store parsed judgments (judgments.imports.ParsedJudgment) in the team's pool.

    For every (keyword text, document) pair in the file the file's grades replace the ones
    imported earlier, so importing the same file twice changes nothing. Keywords whose
    values read the pool are marked dirty in this transaction (their values recompute
    after commit). Returns counts: imported, replaced, keywords (texts), dirty_keywords.
    """
    if scale_lookup.scale_for_team(team_id=team.pk, code=scale) is None:
        raise ValidationError({"scale": f"Unknown scale {scale!r}."})
    rows = [
        PoolJudgment(team=team, scale=scale, normalized_text=Keyword.normalize(item.text),
                     text=item.text.strip(), doc_id=item.doc_id, grade=item.grade,
                     source=source[:200], imported_by=user, imported_at=timezone.now(),
                     grader=item.grader, grader_kind=item.grader_kind, unsure=item.unsure,
                     note=item.note, reason=item.reason, position=item.position,
                     graded_at=item.graded_at)
        for item in judgments
    ]
    pairs = {(row.normalized_text, row.doc_id) for row in rows}
    texts = {text for text, _ in pairs}
    replaced = 0
    stale: list[int] = []
    if texts:
        earlier = PoolJudgment.objects.filter(team=team, scale=scale, normalized_text__in=texts)
        stale = [pk for pk, text, doc_id in earlier.values_list("pk", "normalized_text", "doc_id")
                 if (text, doc_id) in pairs]
    PoolJudgment.objects.bulk_create(rows, batch_size=2000)
    _pool_slots_repoint(team=team, scale=scale, stale=stale)
    for start in range(0, len(stale), 2000):
        replaced += PoolJudgment.objects.filter(pk__in=stale[start:start + 2000]).delete()[0]
    dirty = _pool_keyword_ids(team=team, scale=scale, texts=texts)
    keywords_mark_dirty(keyword_ids=dirty)
    return {"imported": len(rows), "replaced": replaced, "keywords": len(texts),
            "dirty_keywords": len(dirty)}


@transaction.atomic
def pool_upload_keep(*, team: Team, user: User, name: str, content: bytes,
                     mapping_name: str = "", mapping: bytes | None = None) -> str:
    """Keep a previewed file for its import and return the token that names it. One file
    per person and team: it replaces their earlier one, and files past
    PoolImportUpload.KEPT_FOR are deleted, so kept files stay few."""
    PoolImportUpload.objects.filter(
        Q(team=team, user=user) | Q(created_at__lt=timezone.now() - PoolImportUpload.KEPT_FOR)
    ).delete()
    token = secrets.token_urlsafe(32)
    PoolImportUpload.objects.create(token=token, team=team, user=user, name=name[:200],
                                    content=content, mapping_name=mapping_name[:200],
                                    mapping=mapping)
    return token


def pool_upload_discard(*, team: Team, user: User, token: str) -> None:
    """Delete the file this person kept for this team under `token`: a token alone (one
    of another person's, sent with a form) deletes nothing of theirs."""
    PoolImportUpload.objects.filter(token=token, team=team, user=user).delete()

