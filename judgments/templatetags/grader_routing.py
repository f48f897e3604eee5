"""The evaluation page's warning about routing tags no member carries.

A template tag because the evaluation page belongs to evaluations, which may not import
judgments (where grader tags live); the page only loads this tag.
"""

from django import template

from evaluations.models import Evaluation
from judgments.queue_selectors import routing_tags_nobody_carries
from searchtweak import access
from searchtweak.models import Role

register = template.Library()


@register.inclusion_tag("judgments/_routing_warning.html", takes_context=True)
def routing_tags_warning(context: template.Context, evaluation: Evaluation) -> dict:
    unmatched = () if evaluation.status == Evaluation.Status.FINISHED else (
        routing_tags_nobody_carries(evaluation=evaluation))
    membership = context.get("current_membership")
    can_tag = access.membership_allows(membership, minimum_role=Role.ADMIN,
                                       team_id=evaluation.team_id)
    return {"unmatched_tags": unmatched, "can_tag": can_tag}
