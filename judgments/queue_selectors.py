"""Reads for the grading queue and the grading page: which evaluations may hand work to a
grader, their progress, the result shown (guidelines, image, lease), the queue's size, and
why it is empty (routing tags). The claims themselves are judgments.queue's."""

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import markdown
import nh3
from django.db.models import Count, Min, Q
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from evaluations.models import Evaluation
from judgments.models import FeedbackSlot, GoldProbe, GraderTags
from judgments.selectors import GradingTarget
from searchtweak import access
from searchtweak.models import Role, Team, User


def grader_tags(*, user: User, team: Team) -> list[str]:
    row = GraderTags.objects.filter(user=user, team=team).first()
    return list(row.tags) if row else []


def tags_route(*, needed: list[str], carried: list[str]) -> bool:
    """The routing rule, for graders and judges alike: an evaluation's work goes to whoever
    carries all of its tags (case and spaces aside)."""
    return _tag_set(needed) <= _tag_set(carried)


def _tag_set(tags: list[str] | None) -> set[str]:
    return {str(tag).strip().lower() for tag in tags or []}


def routes_to(*, user: User, team_id: int, tags: list[str]) -> bool:
    """Whether an evaluation carrying `tags` may hand work to this member: they carry all."""
    if not _tag_set(tags):
        return True
    row = GraderTags.objects.filter(user=user, team_id=team_id).first()
    return tags_route(needed=tags, carried=row.tags if row else [])


def target_shuffled_ids(target: GradingTarget) -> frozenset[int]:
    """The shuffled evaluation among a target's queue (slot_claim_next_assigned's
    `shuffled_ids`)."""
    return frozenset([target.evaluation_id]) if target.shuffle_results else frozenset()


def target_decisive_ids(target: GradingTarget) -> frozenset[int]:
    """The target's evaluation when it hands out what decides first
    (slot_claim_next_assigned's `decisive_ids`)."""
    return frozenset([target.evaluation_id]) if (
        target.grading_order == Evaluation.GradingOrder.DECISIVE) else frozenset()


def target_gold_ids(target: GradingTarget) -> frozenset[int]:
    """The target's evaluation when its queue slips in gold probes
    (slot_claim_next_assigned's `gold_ids`)."""
    return frozenset([target.evaluation_id]) if target.gold else frozenset()


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
    return queue_evaluations(user=user, team=team, evaluation=evaluation)[0]


def queue_evaluations(
    *, user: User, team: Team, evaluation: Evaluation | None = None
) -> tuple[list[int], frozenset[int], frozenset[int]]:
    """queue_evaluation_ids, which of them shuffle their results, and which hand out what
    decides first (one read for all)."""
    if not access.can(user=user, team_id=team.pk, minimum_role=Role.GRADER):
        return [], frozenset(), frozenset()
    if evaluation is not None:
        # The caller loaded it in this request: no need to read it again.
        rows = [(evaluation.pk, evaluation.tags, evaluation.shuffle_results,
                 evaluation.grading_order)] if (
            evaluation.team_id == team.pk and evaluation.takes_grades()
        ) else []
    else:
        rows = list(
            Evaluation.objects.filter(team=team).taking_grades()
            .order_by("started_at", "pk").values_list("pk", "tags", "shuffle_results",
                                                   "grading_order")
        )
    needed = [(pk, {str(tag).strip().lower() for tag in (tags or [])}) for pk, tags, _, _ in rows]
    # Most evaluations carry no tags: the grader's own are read only when one does.
    carried = (
        {tag.strip().lower() for tag in grader_tags(user=user, team=team)}
        if any(tags for _, tags in needed) else set()
    )
    ids = [pk for pk, tags in needed if tags <= carried]
    return (ids, frozenset(pk for pk, _, shuffled, _ in rows if shuffled and pk in ids),
            frozenset(pk for pk, _, _, order in rows
                      if order == Evaluation.GradingOrder.DECISIVE and pk in ids))


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
    # Results this grader graded in the scope, their gold probes too: grading a probe moves
    # it as grading a slot does, so the page never tells them apart (judgments.views).
    mine: int
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
    probes = GoldProbe.objects.filter(
        user=user, evaluation_id__in=evaluation_ids, grade__isnull=False).count()
    return Progress(mine=counts["mine"] + probes, graded=counts["graded"],
                    total=counts["total"])


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


def free_slot_q(now) -> Q:
    """An ungraded slot nobody holds: never assigned, released, or its lease ran out.
    (judgments.queries.queue_claim_sql states the same rule in SQL for the claim itself.)"""
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
        active = [(evaluation.pk, evaluation.tags)] if evaluation.takes_grades() else []
    else:
        active = list(Evaluation.objects.filter(team=team).taking_grades()
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
