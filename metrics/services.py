"""The metrics app's services: the team baseline, and the recompute pipeline's services
re-exported from metrics.recompute for callers that import them from here."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.models import Action
from audit.services import audit_object
from evaluations.models import Evaluation
from metrics.models import TeamBaseline
from metrics.recompute.means import evaluation_means_refresh  # noqa: F401  re-exported
from metrics.recompute.run import (  # noqa: F401  re-exported
    RUN_KEYWORDS,
    RecomputeConflict,
    RecomputeRun,
    evaluation_metrics_recompute,
    evaluation_scale,
    evaluation_transformers,
    keyword_metrics_recompute,
)
from metrics.recompute.scheduling import (  # noqa: F401  re-exported
    ChangedKeywords,
    dirty_keywords_due,
    dirty_keywords_due_by_evaluation,
    keyword_pool_siblings_mark_dirty,
    keywords_fetched_mark_dirty,
    recompute_due_clear,
    recompute_due_release,
    recompute_due_set,
)
from searchtweak.models import Team, User

# --- the team baseline the dashboards compare against ---


@transaction.atomic
def team_baseline_set(*, team: Team, evaluation: Evaluation, user: User) -> TeamBaseline:
    """Mark a finished evaluation of the team as its baseline (replacing the previous one)."""
    if evaluation.team_id != team.pk:
        raise ValidationError({"evaluation": "The baseline must be one of the team's evaluations."})
    if evaluation.status != Evaluation.Status.FINISHED:
        raise ValidationError({"evaluation": "Only a finished evaluation can be the baseline."})
    previous = TeamBaseline.objects.filter(team=team).values_list("evaluation_id",
                                                                   flat=True).first()
    baseline, _ = TeamBaseline.objects.update_or_create(
        team=team, defaults={"evaluation": evaluation, "set_by": user, "set_at": timezone.now()}
    )
    audit_object(action=Action.TEAM_BASELINE_CHANGED, instance=team, object_type="team",
                 actor=user, team_id=team.pk, before={"baseline": previous},
                 after={"baseline": evaluation.pk})
    return baseline


@transaction.atomic
def team_baseline_clear(*, team: Team) -> None:
    previous = TeamBaseline.objects.filter(team=team).values_list("evaluation_id",
                                                                   flat=True).first()
    if previous is None:
        return
    TeamBaseline.objects.filter(team=team).delete()
    audit_object(action=Action.TEAM_BASELINE_CHANGED, instance=team, object_type="team",
                 team_id=team.pk, before={"baseline": previous}, after={"baseline": None})

