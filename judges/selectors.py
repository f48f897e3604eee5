"""Reads of judge administration and the access function of a judge."""

from django.db.models import Count, QuerySet
from django.http import Http404

from evaluations.selectors import CONFIGURATION_ROLE as ENDPOINT_CONFIGURATION_ROLE
from judges.models import Judge
from searchtweak import access
from searchtweak.models import Role, User

# A judge's configuration (URL, key, templates, parameters, limits) is an admin's, like an
# endpoint's: its edit, delete and Test pages and the API's detail and writes ask for it.
CONFIGURATION_ROLE = ENDPOINT_CONFIGURATION_ROLE
# Leads choose the judge of a run: the list (page and API) shows them every judge without
# its configuration.
LIST_ROLE = Role.LEAD


def judge_get_for_user(*, user: User, judge_id: int, minimum_role: str = CONFIGURATION_ROLE
                       ) -> Judge:
    """The judge (team and account loaded): 404 when missing or another team's, 403 for a
    member below ``minimum_role``."""
    judge = Judge.objects.select_related("team", "user").filter(pk=judge_id).first()
    if judge is None:
        raise Http404("No such judge.")
    access.team_access(user=user, team_id=judge.team_id, minimum_role=minimum_role,
                       what="judge")
    return judge


def judges_for_team(*, team_id: int) -> QuerySet[Judge]:
    """The team's judges by name, each with its ``run_count``."""
    return Judge.objects.filter(team_id=team_id).annotate(
        run_count=Count("runs")).order_by("name", "id")
