"""The triage page of an evaluation (judge and people disagree, the largest impact first)
and its one action, Adjudicate. Leads: the page shows everyone's grades
(access.GRADES_ROLE); the reads are judges.triage's, the write judgments.adjudication's."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from evaluations.selectors import evaluation_get_for_user
from judges import triage
from judgments import scales as scale_lookup
from judgments.adjudication import snapshot_adjudicate
from searchtweak import access
from searchtweak.integers import form_integer


class AdjudicateForm(forms.Form):
    grade = form_integer()  # the evaluation's scale is the service's to check
    gold = forms.BooleanField(required=False)


@require_GET
@login_required
def evaluation_triage(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                         minimum_role=access.GRADES_ROLE)
    found = triage.evaluation_triage(evaluation=evaluation,
                                     visibility=access.grade_visibility(user=request.user))
    return render(request, "judges/triage.html", {
        "evaluation": evaluation, "triage": found,
        "scale": scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale),
    })


@require_POST
@login_required
def adjudicate(request: HttpRequest, evaluation_id: int, snapshot_id: int) -> HttpResponse:
    evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                         minimum_role=access.GRADES_ROLE)
    snapshot = triage.triage_snapshot_get(evaluation=evaluation, snapshot_id=snapshot_id)
    form = AdjudicateForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError({"grade": "Choose a grade."})
        answer = snapshot_adjudicate(lead=request.user, evaluation=evaluation,
                                     snapshot=snapshot, grade=form.cleaned_data["grade"],
                                     gold=form.cleaned_data["gold"])
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, (
            f"Settled {snapshot.doc_id} for “{snapshot.keyword.text}”: {answer.grade}"
            f"{' (gold)' if answer.gold else ''}. Its values are being recomputed."))
    return redirect("judges:triage", evaluation.pk)
