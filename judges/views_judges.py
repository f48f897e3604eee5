"""Pages of judge administration: the list (leads too: they choose judges for runs), and
for admins create, edit, delete (deactivate when used) and the Test action."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations.views import confirm_page
from judges import samples, selectors, services, trust
from judges.access import judge_get_for_user
from judges.forms import JudgeForm, JudgeTestForm, TrustPolicyForm
from searchtweak import access
from searchtweak.forms import add_service_errors


@require_GET
@login_required
def judge_list(request: HttpRequest) -> HttpResponse:
    team = access.current_team_access(user=request.user,
                                      minimum_role=selectors.LIST_ROLE).team
    policy = trust.trust_policy(team_id=team.pk)
    return render(request, "judges/judge_list.html", {
        "judges": selectors.judges_for_team(team_id=team.pk),
        "can_edit": access.current_team_can(user=request.user, team_id=team.pk,
                                            minimum_role=selectors.CONFIGURATION_ROLE),
        "policy": policy,
        "policy_form": TrustPolicyForm(initial={"min_pairs": policy.min_pairs,
                                                "min_kappa": policy.min_kappa}),
    })


@require_POST
@login_required
def trust_policy_edit(request: HttpRequest) -> HttpResponse:
    """The current team's bar for letting a judge's grades count (admins)."""
    team = access.current_team_access(user=request.user,
                                      minimum_role=selectors.CONFIGURATION_ROLE).team
    form = TrustPolicyForm(request.POST)
    if form.is_valid():
        try:
            trust.trust_policy_update(team=team, by=request.user, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, "The bar for letting a judge's grades count is saved.")
            return redirect(reverse("judges:judge_list") + "#trust-policy")
    return render(request, "judges/judge_list.html", {
        "judges": selectors.judges_for_team(team_id=team.pk), "can_edit": True,
        "policy": trust.trust_policy(team_id=team.pk), "policy_form": form,
    }, status=400)


def _render_form(request: HttpRequest, form: JudgeForm, judge=None) -> HttpResponse:
    return render(request, "judges/judge_form.html", {"form": form, "judge": judge},
                  status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def judge_create(request: HttpRequest) -> HttpResponse:
    team = access.current_team_access(user=request.user,
                                      minimum_role=selectors.CONFIGURATION_ROLE).team
    form = JudgeForm(request.POST or None, team=team)
    if request.method == "POST" and form.is_valid():
        try:
            judge = services.judge_create(team=team, by=request.user, **form.service_kwargs())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Judge {judge.name} created. Try it on sample pairs.")
            return redirect("judges:judge_test", judge_id=judge.pk)
    return _render_form(request, form)


@require_http_methods(["GET", "POST"])
@login_required
def judge_edit(request: HttpRequest, judge_id: int) -> HttpResponse:
    judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                               minimum_role=selectors.CONFIGURATION_ROLE)
    form = JudgeForm(request.POST or None, team=judge.team, judge=judge,
                     initial=JudgeForm.initial_for(judge))
    if request.method == "POST" and form.is_valid():
        try:
            services.judge_update(judge=judge, by=request.user, **form.service_kwargs())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Judge {form.cleaned_data['name'].strip()} saved.")
            return redirect("judges:judge_list")
    return _render_form(request, form, judge)


@require_http_methods(["GET", "POST"])
@login_required
def judge_delete(request: HttpRequest, judge_id: int) -> HttpResponse:
    """GET asks; POST deletes an unused judge, deactivates one whose grades or runs exist."""
    judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                               minimum_role=selectors.CONFIGURATION_ROLE)
    if request.method == "GET":
        used = services.judge_is_used(judge=judge)
        if not used:
            consequence, button = ("It will be deleted for good, with its account and its "
                                   "Test calls."), "Delete judge"
        elif judge.is_active:
            consequence, button = ("So it will be deactivated, not deleted: its grades keep "
                                   "saying who gave them, its running runs pause, and you "
                                   "can make it active again."), "Deactivate judge"
        else:
            consequence, button = "It is inactive already and cannot be deleted.", ""
        return confirm_page(
            request, title=f"Delete judge {judge.name}?",
            dependents="It has runs or grades." if used else "It has no runs and no grades.",
            consequence=consequence, button=button, danger=not used,
            cancel_url=reverse("judges:judge_list"))
    if services.judge_delete(judge=judge):
        messages.success(request, f"Judge {judge.name} deleted.")
    else:
        messages.success(request, f"Judge {judge.name} has runs or grades, so it was "
                         "deactivated instead of deleted.")
    return redirect("judges:judge_list")


@require_http_methods(["GET", "POST"])
@login_required
def judge_test(request: HttpRequest, judge_id: int) -> HttpResponse:
    """Ask the judge, as saved, about sample pairs; shows request, answer and verdict."""
    judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                               minimum_role=selectors.CONFIGURATION_ROLE)
    form = JudgeTestForm(request.POST or None, team=judge.team)
    outcome = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            outcome = samples.judge_test_sample(
                judge=judge, keyword=data["keyword"], guidelines=data["guidelines"],
                scale_code=data["scale"], documents=data["documents"])
        except ValidationError as error:
            add_service_errors(form, error)
    return render(request, "judges/judge_test.html", {
        "judge": judge, "form": form, "outcome": outcome,
        "request_json": json.dumps(outcome.request, indent=2, ensure_ascii=False)
        if outcome and outcome.request else "",
    }, status=400 if form.errors else 200)
