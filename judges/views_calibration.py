"""The calibration page of a judge (leads read it) and the "counts" switch (admins)."""

from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evaluations.selectors import CONFIGURATION_ROLE
from judges import calibration, trust
from judges.access import judge_evaluation_get_for_user, judge_get_for_user
from judges.models import Judge
from searchtweak import access
from searchtweak.integers import ID_MAX, form_integer
from searchtweak.models import Role


class CalibrationForm(forms.Form):
    evaluation = form_integer(min_value=1, max_value=ID_MAX, required=False)


class CountsForm(forms.Form):
    counts = forms.TypedChoiceField(choices=[("true", "yes"), ("false", "no")],
                                    coerce=lambda value: value == "true")
    evaluation = form_integer(min_value=1, max_value=ID_MAX, required=False)
    override_reason = forms.CharField(required=False, strip=True)


@require_GET
@login_required
def judge_calibration(request: HttpRequest, judge_id: int) -> HttpResponse:
    judge = judge_get_for_user(user=request.user, judge_id=judge_id, minimum_role=Role.LEAD)
    form = CalibrationForm(request.GET)
    choices = list(calibration.calibration_evaluations(judge=judge))
    evaluation = None
    if form.is_valid() and form.cleaned_data["evaluation"]:
        evaluation = judge_evaluation_get_for_user(
            user=request.user, judge=judge, evaluation_id=form.cleaned_data["evaluation"])
    elif form.is_valid() and choices:
        evaluation = choices[0]
    figures = calibration.judge_calibration(judge=judge, evaluation=evaluation) \
        if evaluation else None
    can_change_counts = access.can(user=request.user, team_id=judge.team_id,
                                   minimum_role=CONFIGURATION_ROLE)
    evidence = None
    if can_change_counts and not judge.counts:
        # The evidence is the shown evaluation's when the judge shadowed it to the end,
        # else its newest shadow run's.
        shadowed = evaluation is not None and trust.has_done_shadow_run(
            judge=judge, evaluation=evaluation)
        evidence = trust.counts_evidence(judge=judge, evaluation=evaluation if shadowed
                                         else None, figures=figures if shadowed else None)
    return render(request, "judges/calibration.html", {
        "judge": judge, "form": form, "choices": choices, "evaluation": evaluation,
        "calibration": figures, "can_change_counts": can_change_counts,
        "evidence": evidence, "policy": trust.trust_policy(team_id=judge.team_id),
    }, status=200 if form.is_valid() else 400)


def calibration_url(judge: Judge, evaluation_id: int | None = None) -> str:
    url = reverse("judges:calibration", args=[judge.pk])
    return f"{url}?{urlencode({'evaluation': evaluation_id})}" if evaluation_id else url


@require_POST
@login_required
def judge_counts(request: HttpRequest, judge_id: int) -> HttpResponse:
    judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                               minimum_role=CONFIGURATION_ROLE)
    form = CountsForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say whether this judge's grades count (true or false).")
        return redirect(calibration_url(judge))
    evaluation = None
    if form.cleaned_data["evaluation"]:
        evaluation = judge_evaluation_get_for_user(
            user=request.user, judge=judge, evaluation_id=form.cleaned_data["evaluation"])
    try:
        judge = trust.judge_mark_counts(
            judge=judge, counts=form.cleaned_data["counts"], by=request.user,
            evaluation=evaluation, override_reason=form.cleaned_data["override_reason"])
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, (
            f"{judge.name}'s grades count now, by your override (the reason is kept beside "
            "it)." if judge.counts_override_reason else f"{judge.name}'s grades count now."
        ) if judge.counts else f"{judge.name}'s grades no longer count: it may only shadow.")
    return redirect(calibration_url(judge, form.cleaned_data["evaluation"]))
