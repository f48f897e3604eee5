"""The team dashboard: active and recent evaluations, the grader's queue, the team's
baseline, each grader's activity and the grades given per day.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, Max, Prefetch, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from evaluations.models import Evaluation, EvaluationMetric
from judgments.models import FeedbackSlot
from judgments.queue_selectors import grader_queue_size
from metrics.selectors import team_baseline
from searchtweak.models import Team, User


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
    ).select_related("model").with_recompute_state().order_by("started_at", "id")[:20])
    recent = list(Evaluation.objects.filter(
        team=team, status=Evaluation.Status.FINISHED, archived_at=None,
    ).select_related("model").order_by("-finished_at", "-id").prefetch_related(
        Prefetch("metric_configs",
                 queryset=EvaluationMetric.objects.with_stored_mean().order_by("position", "id"))
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
