"""The access functions of judges: every judges page and API view loads its judge (and the
evaluation it works on) through them."""

from django.http import Http404

from evaluations.models import Evaluation
from evaluations.selectors import evaluation_get_for_user
from judges.models import Judge
from searchtweak import access
from searchtweak.models import Role, User


def judge_get_for_user(*, user: User, judge_id: int, minimum_role: str = Role.LEAD) -> Judge:
    """The judge (team and account loaded) once the caller holds `minimum_role` in its team:
    404 for a judge that does not exist or is another team's, 403 below the role."""
    return access.row_get_for_user(Judge.objects.select_related("team", "user"), user=user,
                                   pk=judge_id, minimum_role=minimum_role, what="judge")


def judge_evaluation_get_for_user(*, user: User, judge: Judge, evaluation_id: int,
                                  minimum_role: str = Role.LEAD) -> Evaluation:
    """An evaluation to put the judge to (or measure it on): one of the judge's team's.
    Another team's is not there for this judge, even to a member of both: 404."""
    evaluation = evaluation_get_for_user(user=user, evaluation_id=evaluation_id,
                                         minimum_role=minimum_role)
    if evaluation.team_id != judge.team_id:
        raise Http404("No such evaluation.")
    return evaluation
