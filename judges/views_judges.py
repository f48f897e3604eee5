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

from judges import selectors, services, trial_calls, trust
from judges.access import judge_get_for_user
from judges.forms import JudgeForm, JudgeTestForm, TrustPolicyForm
from judges.models import CALLED_PROVIDERS
from searchtweak import access
from searchtweak.forms import add_service_errors
from searchtweak.views_shared import (
    DeleteWording,
    current_team,
    delete_confirm_page,
    delete_or_keep_response,
    form_saved_response,
)


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
                                                "min_kappa": policy.min_kappa,
                                                "monthly_budget": policy.monthly_budget,
                                                "monthly_budget_currency":
                                                    policy.monthly_budget_currency}),
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
    team = current_team(request, selectors.CONFIGURATION_ROLE)
    form = JudgeForm(request.POST or None, team=team)
    saved = form_saved_response(
        request, form, lambda: services.judge_create(team=team, by=request.user,
                                                     **form.service_kwargs()),
        success=lambda judge: f"Judge {judge.name} created. Try it on sample pairs.",
        next_url=lambda judge: reverse("judges:judge_test", args=[judge.pk]))
    return saved or _render_form(request, form)


@require_http_methods(["GET", "POST"])
@login_required
def judge_edit(request: HttpRequest, judge_id: int) -> HttpResponse:
    judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                               minimum_role=selectors.CONFIGURATION_ROLE)
    if judge.provider not in CALLED_PROVIDERS:
        # A clicks grader's settings are behaviour's, on its own edit page.
        return redirect("behaviour:click_grader_edit", judge_id=judge.pk)
    form = JudgeForm(request.POST or None, team=judge.team, judge=judge,
                     initial=JudgeForm.initial_for(judge))
    saved = form_saved_response(
        request, form, lambda: services.judge_update(judge=judge, by=request.user,
                                                     **form.service_kwargs()),
        success=lambda _: f"Judge {form.cleaned_data['name'].strip()} saved.",
        next_url="judges:judge_list")
    return saved or _render_form(request, form, judge)


@require_http_methods(["GET", "POST"])
@login_required
def judge_delete(request: HttpRequest, judge_id: int) -> HttpResponse:
    """GET asks; POST deletes an unused judge, deactivates one whose grades or runs exist."""
    judge = judge_get_for_user(user=request.user, judge_id=judge_id,
                               minimum_role=selectors.CONFIGURATION_ROLE)
    if request.method == "GET":
        used = services.judge_is_used(judge=judge)
        return delete_confirm_page(
            request, title=f"Delete judge {judge.name}?",
            dependents="It has runs or grades." if used else "It has no runs and no grades.",
            used=used, kept=not judge.is_active, cancel_url=reverse("judges:judge_list"),
            wording=DeleteWording(
                delete=("It will be deleted for good, with its account and its Test calls.",
                        "Delete judge"),
                keep=("So it will be deactivated, not deleted: its grades keep saying who "
                      "gave them, its running runs pause, and you can make it active again.",
                      "Deactivate judge"),
                kept_already="It is inactive already and cannot be deleted."))
    return delete_or_keep_response(
        request, lambda: services.judge_delete(judge=judge),
        deleted=f"Judge {judge.name} deleted.",
        kept=f"Judge {judge.name} has runs or grades, so it was deactivated instead of "
             "deleted.",
        next_url="judges:judge_list")


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
            outcome = trial_calls.judge_test_sample(
                judge=judge, keyword=data["keyword"], guidelines=data["guidelines"],
                scale_code=data["scale"], documents=data["documents"])
        except ValidationError as error:
            add_service_errors(form, error)
    return render(request, "judges/judge_test.html", {
        "judge": judge, "form": form, "outcome": outcome,
        "request_json": json.dumps(outcome.request, indent=2, ensure_ascii=False)
        if outcome and outcome.request else "",
    }, status=400 if form.errors else 200)
