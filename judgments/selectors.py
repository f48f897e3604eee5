"""Reads for the grading pages and APIs, and the access functions they go through."""

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import markdown
import nh3
from django.db.models import Count, Min, Q, QuerySet
from django.http import Http404
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from evaluations.models import Evaluation, Snapshot
from judgments.models import FeedbackSlot, GraderTags, PoolJudgment, Scale, Transformer
from searchtweak import access, sql
from searchtweak.models import Role, Team, User

# --- access functions: 404 for missing rows and rows outside the caller's teams ---


def slot_get_for_user(*, user: User, slot_id: int, minimum_role: str = Role.GRADER) -> FeedbackSlot:
    slot = (
        FeedbackSlot.objects.select_related(
            "evaluation", "evaluation__team", "keyword", "snapshot", "user")
        .filter(pk=slot_id)
        .first()
    )
    if slot is None:
        raise Http404("No such slot.")
    access.team_access(user=user, team_id=slot.evaluation.team_id, minimum_role=minimum_role,
                       what="slot")
    return slot


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

    @property
    def is_active(self) -> bool:
        return self.status == Evaluation.Status.ACTIVE


# The grading API reads these on every request: one raw statement each, the membership
# check joined in, because building the ORM queries cost more than running them.
_TARGET_COLUMNS = 'e."id", e."team_id", e."status", e."scale", e."tags", m."role"'
_MEMBER_JOIN = (
    'LEFT JOIN "searchtweak_membership" m ON m."team_id" = e."team_id" AND m."user_id" = %s')


def _grading_target(row: dict | None, *, what: str, snapshot_id: int | None = None):
    # Every role may grade; a missing row and a non-member (no role joined) alike are 404.
    access.check_membership_row(row["role"] if row else None, Role.GRADER, what=what)
    return GradingTarget(
        evaluation_id=row["id"], team_id=row["team_id"], status=row["status"],
        scale=row["scale"], tags=list(sql.json_value(row["tags"]) or []),
        snapshot_id=snapshot_id)


def evaluation_target_for_user(*, user: User, evaluation_id: int) -> GradingTarget:
    row = sql.fetch_one(
        f'SELECT {_TARGET_COLUMNS} FROM "evaluations_evaluation" e {_MEMBER_JOIN}'
        ' WHERE e."id" = %s', [user.pk, evaluation_id])
    return _grading_target(row, what="evaluation")


def snapshot_target_for_user(*, user: User, snapshot_id: int) -> GradingTarget:
    row = sql.fetch_one(
        f'SELECT {_TARGET_COLUMNS} FROM "evaluations_snapshot" s'
        ' JOIN "evaluations_keyword" k ON k."id" = s."keyword_id"'
        ' JOIN "evaluations_evaluation" e ON e."id" = k."evaluation_id"'
        f' {_MEMBER_JOIN} WHERE s."id" = %s', [user.pk, snapshot_id])
    return _grading_target(row, what="snapshot", snapshot_id=snapshot_id)


# A slot as the grading API answers it (the slot, its grader, result and keyword), from a
# slot row named f: columns and joins. services reads it from a claim's RETURNING too.
ASSIGNED_SLOT_SELECT = (
    'f."id", f."index", f."grade", f."unsure", f."note", f."assigned_at",'
    ' f."lease_expires_at", f."graded_at", f."reused_from_id", f."reused_from_pool_id",'
    ' f."evaluation_id", f."snapshot_id", u."username", k."text" AS keyword,'
    ' s."position", s."doc_id", s."name", s."image", s."fields"',
    'JOIN "evaluations_snapshot" s ON s."id" = f."snapshot_id"'
    ' JOIN "evaluations_keyword" k ON k."id" = f."keyword_id"'
    ' LEFT JOIN "searchtweak_user" u ON u."id" = f."user_id"',
)


def assigned_slot_from_row(row: dict) -> dict:
    """ASSIGNED_SLOT_SELECT's row, its values as the ORM would read them."""
    for name in ("assigned_at", "lease_expires_at", "graded_at"):
        row[name] = sql.time_value(row[name])
    row["unsure"] = bool(row["unsure"])
    row["fields"] = sql.json_value(row["fields"])
    return row


def assigned_slot(*, slot_id: int) -> dict:
    """A slot as the grading API answers it: the slot, its grader, result and keyword."""
    columns, joins = ASSIGNED_SLOT_SELECT
    row = sql.fetch_one(
        f'SELECT {columns} FROM "judgments_feedbackslot" f {joins} WHERE f."id" = %s',
        [slot_id])
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


# --- the queue ---


def grader_tags(*, user: User, team: Team) -> list[str]:
    row = GraderTags.objects.filter(user=user, team=team).first()
    return list(row.tags) if row else []


def routes_to(*, user: User, team_id: int, tags: list[str]) -> bool:
    """Whether an evaluation carrying `tags` may hand work to this member: they carry all."""
    needed = {str(tag).strip().lower() for tag in tags or []}
    if not needed:
        return True
    row = GraderTags.objects.filter(user=user, team_id=team_id).first()
    return needed <= {tag.strip().lower() for tag in (row.tags if row else [])}


def target_queue(*, user: User, target: GradingTarget) -> list[int]:
    """queue_evaluation_ids for one grading target the caller may see: its evaluation when
    it is active and routes work to them, else nothing."""
    routed = target.is_active and routes_to(
        user=user, team_id=target.team_id, tags=target.tags)
    return [target.evaluation_id] if routed else []


def queue_evaluation_ids(
    *, user: User, team: Team, evaluation: Evaluation | None = None
) -> list[int]:
    """The active evaluations whose work may go to this user: they carry all its tags."""
    if not access.can(user=user, team_id=team.pk, minimum_role=Role.GRADER):
        return []
    if evaluation is not None:
        # The caller loaded it in this request: no need to read it again.
        rows = [(evaluation.pk, evaluation.tags)] if (
            evaluation.team_id == team.pk and evaluation.status == Evaluation.Status.ACTIVE
        ) else []
    else:
        rows = list(
            Evaluation.objects.filter(team=team, status=Evaluation.Status.ACTIVE)
            .order_by("started_at", "pk").values_list("pk", "tags")
        )
    needed = [(pk, {str(tag).strip().lower() for tag in (tags or [])}) for pk, tags in rows]
    # Most evaluations carry no tags: the grader's own are read only when one does.
    carried = (
        {tag.strip().lower() for tag in grader_tags(user=user, team=team)}
        if any(tags for _, tags in needed) else set()
    )
    return [pk for pk, tags in needed if tags <= carried]


def previous_graded_slot(
    *, user: User, evaluation_ids: list[int], before: FeedbackSlot | None
) -> FeedbackSlot | None:
    """The result the grader graded just before `before` (or their last one): Backspace."""
    slots = FeedbackSlot.objects.filter(
        evaluation_id__in=evaluation_ids, user=user, grade__isnull=False,
        reused_from__isnull=True,
    )
    if before is not None and before.assigned_at is not None:
        slots = slots.filter(
            Q(assigned_at__lt=before.assigned_at)
            | Q(assigned_at=before.assigned_at, pk__lt=before.pk)
        ).exclude(pk=before.pk)
    return slots.order_by("-assigned_at", "-pk").first()


def recently_graded_evaluation_ids(*, user: User, team: Team, hours: int = 12) -> list[int]:
    since = timezone.now() - timedelta(hours=hours)
    return list(
        FeedbackSlot.objects.filter(user=user, evaluation__team=team, graded_at__gte=since)
        .values_list("evaluation_id", flat=True).distinct()
    )


@dataclass(frozen=True)
class Progress:
    mine: int  # slots this grader graded in the scope
    graded: int  # slots graded by anyone in the scope
    total: int  # all slots in the scope

    @property
    def percent(self) -> int:
        return round(100 * self.graded / self.total) if self.total else 0


def grading_progress(*, user: User, evaluation_ids: list[int]) -> Progress:
    counts = FeedbackSlot.objects.filter(evaluation_id__in=evaluation_ids).aggregate(
        total=Count("pk"),
        graded=Count("pk", filter=Q(grade__isnull=False)),
        mine=Count("pk", filter=Q(grade__isnull=False, user=user)),
    )
    return Progress(mine=counts["mine"], graded=counts["graded"], total=counts["total"])


def guidelines_html(*, text: str) -> SafeString:
    """The evaluation's scoring guidelines: Markdown rendered, then sanitised by nh3."""
    if not text.strip():
        return mark_safe("")
    rendered = markdown.markdown(text, extensions=["sane_lists"])
    return mark_safe(nh3.clean(rendered, link_rel="noopener noreferrer nofollow"))


# Images a browser shows without running anything: raster and SVG data URIs (an SVG in an
# <img> runs no script) and web addresses; never javascript:, other data: types or paths.
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml)[;,]", re.IGNORECASE)


def document_image_src(image: str) -> str:
    """A result's image (the mapper's `image`) as an <img src>, or "" when unsafe."""
    image = (image or "").strip()
    if _DATA_IMAGE.match(image):
        return image
    parsed = urlsplit(image)
    if parsed.scheme.lower() in ("http", "https") and parsed.netloc:
        return image
    return ""


def lease_minutes_left(slot: FeedbackSlot) -> int:
    """Whole minutes, rounded up, until the grader's reservation of an ungraded slot ends."""
    if slot.grade is not None or slot.lease_expires_at is None:
        return 0
    seconds = (slot.lease_expires_at - timezone.now()).total_seconds()
    return max(0, math.ceil(seconds / 60))


# --- lists ---


def feedback_rows(
    *, evaluation: Evaluation, grader_id: int | None = None, keyword_id: int | None = None
) -> QuerySet[FeedbackSlot]:
    slots = FeedbackSlot.objects.filter(evaluation=evaluation).select_related(
        "keyword", "snapshot", "user", "graded_by")
    if grader_id:
        slots = slots.filter(user_id=grader_id)
    if keyword_id:
        slots = slots.filter(keyword_id=keyword_id)
    return slots.order_by("keyword__position", "snapshot__position", "index")


def evaluation_graders(*, evaluation: Evaluation) -> QuerySet[User]:
    return User.objects.filter(feedback_slots__evaluation=evaluation).distinct().order_by(
        "username")


def evaluation_snapshots(
    *, evaluation: Evaluation, keyword_id: int | None = None
) -> QuerySet[Snapshot]:
    snapshots = Snapshot.objects.filter(keyword__evaluation=evaluation).select_related(
        "keyword").prefetch_related("slots", "slots__user")
    if keyword_id:
        snapshots = snapshots.filter(keyword_id=keyword_id)
    return snapshots.order_by("keyword__position", "position")


def team_grader_tags(*, team: Team) -> dict[int, list[str]]:
    return {row.user_id: list(row.tags) for row in GraderTags.objects.filter(team=team)}


def pool_judgment_count(*, team: Team) -> int:
    return PoolJudgment.objects.filter(team=team).count()


def free_slot_q(now) -> Q:
    """An ungraded slot nobody holds: never assigned, released, or its lease ran out.
    (services._CLAIM_SQL states the same rule in SQL for the claim itself.)"""
    return Q(grade__isnull=True) & (Q(user__isnull=True) | Q(lease_expires_at__lt=now))


def grader_queue_size(*, user: User, team: Team) -> int:
    """Results waiting for this grader: free slots of the evaluations they may grade, one
    per snapshot they do not already hold a slot of, plus the slots they hold now."""
    evaluation_ids = queue_evaluation_ids(user=user, team=team)
    if not evaluation_ids:
        return 0
    now = timezone.now()
    free = (FeedbackSlot.objects.filter(evaluation_id__in=evaluation_ids)
            .filter(free_slot_q(now))
            .exclude(snapshot_id__in=FeedbackSlot.objects.filter(
                evaluation_id__in=evaluation_ids, user=user).values("snapshot_id")))
    held = FeedbackSlot.objects.filter(evaluation_id__in=evaluation_ids, user=user,
                                       grade__isnull=True, lease_expires_at__gte=now)
    return free.values("snapshot_id").distinct().count() + held.count()


# --- routing tags: why a grader's queue is empty, and evaluations nobody is routed to ---


def _tag_set(tags: list[str] | None) -> set[str]:
    return {str(tag).strip().lower() for tag in tags or [] if str(tag).strip()}


def _tag_list(tags: list[str] | None) -> tuple[str, ...]:
    """An evaluation's routing tags as graders carry them (lower case), in its order."""
    return tuple(dict.fromkeys(str(tag).strip().lower() for tag in tags or [] if str(tag).strip()))


@dataclass(frozen=True)
class RoutedElsewhere:
    tags: tuple[str, ...]  # the routing tags the results need, all of them
    result_count: int  # results (snapshots) with a slot still waiting for a grade


@dataclass(frozen=True)
class EmptyQueue:
    """Why the queue handed this grader nothing, most useful reason first:
    "leased": others hold results that may still come to them (their leases run out);
    "done": they graded what there was for them (or everything is graded);
    "routed": work waits only in evaluations routed to tags they do not carry;
    "inactive": no evaluation in scope is active; "no_team": they are in no team."""

    reason: str
    graded_count: int = 0  # results this grader graded in scope
    leased_count: int = 0  # results others hold right now that this grader could take
    leased_until: datetime | None = None  # when the first of those leases runs out
    routed_elsewhere: tuple[RoutedElsewhere, ...] = ()
    carried_tags: tuple[str, ...] = ()

    @property
    def routed_result_count(self) -> int:
        return sum(group.result_count for group in self.routed_elsewhere)


def grader_empty_queue(
    *, user: User, team: Team | None, evaluation: Evaluation | None = None
) -> EmptyQueue:
    """Read after the queue handed `user` nothing in the team (or one evaluation of it)."""
    if team is None:
        return EmptyQueue(reason="no_team")
    if evaluation is not None:
        scope_ids = [evaluation.pk]
        active = [(evaluation.pk, evaluation.tags)] if (
            evaluation.status == Evaluation.Status.ACTIVE) else []
    else:
        active = list(Evaluation.objects.filter(team=team, status=Evaluation.Status.ACTIVE)
                      .order_by("started_at", "pk").values_list("pk", "tags"))
        # An evaluation finishes on its last grade: the work just done still counts.
        scope_ids = sorted({pk for pk, _ in active} | set(
            recently_graded_evaluation_ids(user=user, team=team)))
    carried = tuple(grader_tags(user=user, team=team))
    carried_set = _tag_set(list(carried))
    routed_ids = [pk for pk, tags in active if _tag_set(tags) <= carried_set]
    elsewhere = {pk: _tag_list(tags) for pk, tags in active if not _tag_set(tags) <= carried_set}
    # A grader takes at most one slot of a result: results they hold a slot of are not theirs.
    held_snapshots = FeedbackSlot.objects.filter(
        user=user, evaluation_id__in=[pk for pk, _ in active]).values("snapshot_id")
    leased = (FeedbackSlot.objects.filter(
        evaluation_id__in=routed_ids, grade__isnull=True, user__isnull=False,
        lease_expires_at__gte=timezone.now())
        .exclude(user=user).exclude(snapshot_id__in=held_snapshots)
        .aggregate(count=Count("snapshot_id", distinct=True), until=Min("lease_expires_at"))
    ) if routed_ids else {"count": 0, "until": None}
    # Grouped by the set of tags needed, named as the first evaluation needing it lists them.
    waiting: dict[frozenset[str], tuple[tuple[str, ...], int]] = {}
    if elsewhere:
        rows = (FeedbackSlot.objects.filter(evaluation_id__in=list(elsewhere), grade__isnull=True)
                .exclude(snapshot_id__in=held_snapshots).values("evaluation_id")
                .annotate(result_count=Count("snapshot_id", distinct=True)))
        counts = {row["evaluation_id"]: row["result_count"] for row in rows}
        for pk, tags in elsewhere.items():
            named, count = waiting.get(frozenset(tags), (tags, 0))
            waiting[frozenset(tags)] = (named, count + counts.get(pk, 0))
    routed_elsewhere = tuple(RoutedElsewhere(tags=tags, result_count=count)
                             for tags, count in waiting.values() if count)
    graded_count = FeedbackSlot.objects.filter(
        evaluation_id__in=scope_ids, user=user, grade__isnull=False).count()
    if leased["count"]:
        reason = "leased"
    elif graded_count:
        reason = "done"
    elif routed_elsewhere:
        reason = "routed"
    elif not active:
        reason = "inactive"
    else:
        reason = "done"
    return EmptyQueue(
        reason=reason, graded_count=graded_count, leased_count=leased["count"],
        leased_until=leased["until"], routed_elsewhere=routed_elsewhere, carried_tags=carried)


def routing_tags_nobody_carries(*, evaluation: Evaluation) -> tuple[str, ...]:
    """The evaluation's routing tags when no member of its team carries all of them (every
    member may grade, so nobody would be handed its results); () when someone does."""
    needed = _tag_list(evaluation.tags)
    if not needed:
        return ()
    carried_by_members = GraderTags.objects.filter(
        team_id=evaluation.team_id,
        user__memberships__team_id=evaluation.team_id).values_list("tags", flat=True)
    if any(set(needed) <= _tag_set(tags) for tags in carried_by_members):
        return ()
    return needed
