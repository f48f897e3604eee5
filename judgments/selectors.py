"""Access functions of the grading pages and APIs (slot, snapshot, grading target), the
assigned slot's row, the feedback lists of leads, and the scale admin's reads. The queue's
reads are judgments.queue_selectors'."""

from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.utils import timezone

from evaluations.models import Evaluation, Snapshot
from judgments import queries
from judgments.models import (
    FeedbackSlot,
    GraderTags,
    PoolImportUpload,
    PoolJudgment,
    Scale,
    Transformer,
)
from judgments.slot_json import ASSIGNED_SLOT_FIELDS
from searchtweak import access, sql
from searchtweak.models import Role, Team, User

# --- access functions: 404 for missing rows and rows outside the caller's teams ---


def slot_get_for_user(*, user: User, slot_id: int, minimum_role: str = Role.GRADER) -> FeedbackSlot:
    return access.row_get_for_user(
        FeedbackSlot.objects.select_related(
            "evaluation", "evaluation__team", "keyword", "snapshot", "user"),
        user=user, pk=slot_id, minimum_role=minimum_role, what="slot",
        team_id_of=lambda slot: slot.evaluation.team_id)


def snapshot_get_for_user(*, user: User, snapshot_id: int) -> Snapshot:
    snapshot = (
        Snapshot.objects.select_related("keyword", "keyword__evaluation",
                                        "keyword__evaluation__team")
        .filter(pk=snapshot_id)
        .first()
    )
    if snapshot is None:
        raise Http404("No such snapshot.")
    access.team_access(user=user, team_id=snapshot.keyword.evaluation.team_id)
    return snapshot


@dataclass(frozen=True)
class GradingTarget:
    """What the grading API needs of an evaluation, or of one snapshot of it, once the
    caller is known to be a member of its team."""

    evaluation_id: int
    team_id: int
    status: str
    scale: str
    tags: list[str]
    snapshot_id: int | None = None
    shuffle_results: bool = False
    grading_order: str = "position"
    strategy: int = 1
    # Its queue slips in gold probes (judgments.gold).
    gold: bool = False

    @property
    def is_active(self) -> bool:
        return Evaluation.status_takes_grades(self.status)


# The grading API reads these on every request: one statement each, the membership
# check joined in (judgments.queries).


def _grading_target(row: dict | None, *, what: str, snapshot_id: int | None = None):
    # Every role may grade; a missing row and a non-member (no role joined) alike are 404.
    access.check_membership_row(row["role"] if row else None, Role.GRADER, what=what)
    return GradingTarget(
        evaluation_id=row["id"], team_id=row["team_id"], status=row["status"],
        scale=row["scale"], tags=list(sql.json_value(row["tags"]) or []),
        snapshot_id=snapshot_id, shuffle_results=bool(row["shuffle_results"]),
        grading_order=row["grading_order"], strategy=row["strategy"],
        gold=bool(row["gold"]))


def evaluation_target_for_user(*, user: User, evaluation_id: int) -> GradingTarget:
    row = queries.evaluation_target_row(user_id=user.pk, evaluation_id=evaluation_id)
    return _grading_target(row, what="evaluation")


def snapshot_target_for_user(*, user: User, snapshot_id: int) -> GradingTarget:
    row = queries.snapshot_target_row(user_id=user.pk, snapshot_id=snapshot_id)
    return _grading_target(row, what="snapshot", snapshot_id=snapshot_id)


def assigned_slot_from_row(row: dict) -> dict:
    """queries.ASSIGNED_SLOT_SELECT's row, its values as the ORM would read them (keyed by
    the slot JSON's field names, judgments.slot_json)."""
    for field in ASSIGNED_SLOT_FIELDS:
        if field.kind in _DECODERS:
            row[field.name] = _DECODERS[field.kind](row[field.name])
    return row


_DECODERS = {"datetime": sql.time_value, "bool": bool, "json": sql.json_value}


def assigned_slot(*, slot_id: int) -> dict:
    """A slot as the grading API answers it: the slot, its grader, result and keyword."""
    row = queries.assigned_slot_row(slot_id=slot_id)
    if row is None:
        raise Http404("No such slot.")
    return assigned_slot_from_row(row)


ADMIN_REASON = "Scales and transformers need the admin role."


def team_get_for_admin(*, user: User, team_id: int) -> Team:
    """The team whose scales and transformers the caller manages: 404 outside the caller's
    teams, 403 with the reason for a member below admin."""
    return access.team_access(user=user, team_id=team_id, minimum_role=Role.ADMIN,
                              reason=ADMIN_REASON).team


def scale_get_for_user(*, user: User, scale_id: int) -> Scale:
    scale = Scale.objects.select_related("team").filter(pk=scale_id).first()
    if scale is None:
        raise Http404("No such scale.")
    team_get_for_admin(user=user, team_id=scale.team_id)
    return scale


def transformer_get_for_user(*, user: User, transformer_id: int) -> Transformer:
    transformer = Transformer.objects.select_related("team").filter(pk=transformer_id).first()
    if transformer is None:
        raise Http404("No such transformer.")
    team_get_for_admin(user=user, team_id=transformer.team_id)
    return transformer


def team_scales(*, team: Team) -> QuerySet[Scale]:
    return Scale.objects.filter(team=team).order_by("name", "pk")


def team_transformers(*, team: Team) -> QuerySet[Transformer]:
    return Transformer.objects.filter(team=team).order_by("source", "target")


def transformer_for_pair(*, team: Team, source: str, target: str) -> Transformer | None:
    return Transformer.objects.filter(team=team, source=source, target=target).first()


# --- lists ---


def feedback_rows(
    *, evaluation: Evaluation, grader_id: int | None = None, keyword_id: int | None = None,
    unsure_only: bool = False,
) -> QuerySet[FeedbackSlot]:
    # user__judge: an LLM judge's account shows its judge's name. The judges app sits above
    # judgments: its relation is followed by name, not imported.
    slots = FeedbackSlot.objects.filter(evaluation=evaluation).select_related(
        "keyword", "snapshot", "user", "user__judge", "graded_by")
    if grader_id:
        slots = slots.filter(user_id=grader_id)
    if keyword_id:
        slots = slots.filter(keyword_id=keyword_id)
    if unsure_only:
        slots = slots.filter(unsure=True)
    return slots.order_by("keyword__position", "snapshot__position", "index")


def evaluation_graders(*, evaluation: Evaluation) -> QuerySet[User]:
    return User.objects.filter(feedback_slots__evaluation=evaluation).distinct().order_by(
        "username")


def evaluation_snapshots(
    *, evaluation: Evaluation, visibility: access.GradeVisibility,
    keyword_id: int | None = None
) -> QuerySet[Snapshot]:
    """The evaluation's results, each with the slots `visibility` lets the caller see (a
    grader: their own only) as `slots.all`."""
    snapshots = Snapshot.objects.filter(keyword__evaluation=evaluation).select_related(
        "keyword").prefetch_related(Prefetch(
            "slots", queryset=FeedbackSlot.objects.filter(visibility.slots())
            .select_related("user").order_by("index")))
    if keyword_id:
        snapshots = snapshots.filter(keyword_id=keyword_id)
    return snapshots.order_by("keyword__position", "position")


def team_grader_tags(*, team: Team) -> dict[int, list[str]]:
    return {row.user_id: list(row.tags) for row in GraderTags.objects.filter(team=team)}


def pool_judgment_count(*, team: Team) -> int:
    return PoolJudgment.objects.filter(team=team).count()


def pool_scales(*, team: Team) -> list[str]:
    """The scales the team's pool holds judgments on, for its export links."""
    return list(PoolJudgment.objects.filter(team=team).order_by("scale")
                .values_list("scale", flat=True).distinct())


def pool_upload_get(*, team: Team, user: User, token: str) -> PoolImportUpload | None:
    """The file this person previewed for this team, while it is kept."""
    if not token:
        return None
    return PoolImportUpload.objects.filter(
        token=token, team=team, user=user,
        created_at__gte=timezone.now() - PoolImportUpload.KEPT_FOR).first()

