"""The tags an admin gives the team's graders (routing slots to them): the list and the
change of one member's tags."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from judgments import selectors
from judgments.forms import GraderTagsForm
from judgments.grader_tags import grader_tags_set
from searchtweak.models import Role
from searchtweak.selectors import team_members
from searchtweak.views_shared import current_team


@require_GET
@login_required
def grader_tags(request: HttpRequest) -> HttpResponse:
    team = current_team(request, Role.ADMIN, reason=selectors.ADMIN_REASON)
    tags = selectors.team_grader_tags(team=team)
    members = [(m, ", ".join(tags.get(m.user_id, []))) for m in team_members(team=team)]
    return render(request, "judgments/grader_tags.html", {"team": team, "members": members})


@require_POST
@login_required
def grader_tags_update(request: HttpRequest, user_id: int) -> HttpResponse:
    team = current_team(request, Role.ADMIN, reason=selectors.ADMIN_REASON)
    membership = team_members(team=team).filter(user_id=user_id).first()
    if membership is None:
        raise Http404("No such member.")
    form = GraderTagsForm(request.POST)
    if form.is_valid():
        row = grader_tags_set(team=team, user=membership.user,
                              tags=form.cleaned_data["tags"])
        messages.success(request, f"{membership.user.username} carries: "
                         f"{', '.join(row.tags) or 'no tags'}.")
    else:
        messages.error(request, " ".join(form.errors.get("tags", ["Invalid tags."])))
    return redirect("judgments:grader_tags")
