"""Reads of judge administration. A judge is loaded for a caller by the one access
function of judges, judges.access.judge_get_for_user."""

from django.db.models import Count, QuerySet

from evaluations.selectors import CONFIGURATION_ROLE as ENDPOINT_CONFIGURATION_ROLE
from judges.models import Judge
from searchtweak.models import Role

# A judge's configuration (URL, key, templates, parameters, limits) is an admin's, like an
# endpoint's: its edit, delete and Test pages and the API's detail and writes ask for it.
CONFIGURATION_ROLE = ENDPOINT_CONFIGURATION_ROLE
# Leads choose the judge of a run: the list (page and API) shows them every judge without
# its configuration.
LIST_ROLE = Role.LEAD


def judges_for_team(*, team_id: int) -> QuerySet[Judge]:
    """The team's judges by name, each with its ``run_count``, and a clicks grader with
    how it learns (``click_grader`` and its source; None for an LLM judge) in the same
    query."""
    return Judge.objects.filter(team_id=team_id).select_related(
        "counts_granted_by", "click_grader__source").annotate(
        run_count=Count("runs")).order_by("name", "id")
