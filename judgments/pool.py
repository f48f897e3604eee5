"""The team's judgment pool: imported judgments stored (replacing earlier ones of the
same pairs) and the previewed files kept for their import. Parsing is judgments.imports;
reads are judgments.selectors."""

import secrets
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

import metrics_engine as core
from audit.models import Action
from audit.services import audit_record
from evaluations.models import EvaluationMetric, Keyword
from judgments import scales as scale_lookup
from judgments.grading import keywords_mark_dirty
from judgments.models import FeedbackSlot, PoolImportUpload, PoolJudgment
from searchtweak.models import Team, User


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
    counts = {"imported": len(rows), "replaced": replaced, "keywords": len(texts),
              "dirty_keywords": len(dirty)}
    audit_record(action=Action.JUDGMENTS_IMPORTED, actor=user, team_id=team.pk,
                 object_type="judgment_pool", object_id=scale,
                 after={"source": source[:200], "scale": scale, "imported": len(rows),
                        "replaced": replaced})
    return counts


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
