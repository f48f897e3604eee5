"""Pages that put judges to work: an evaluation's runs (a panel its page loads), starting
a run, one run's live progress and failed pairs, and pausing, resuming, cancelling and
retrying it. The engine is judges.runs; these only ask, call it and show."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations.models import Evaluation
from judges import estimates, run_selectors, runs
from judges.forms_runs import NEEDS_COUNTS, RunStartForm
from searchtweak.forms import add_service_errors


def _panel_context(evaluation: Evaluation, form: RunStartForm) -> dict:
    return {
        "evaluation": evaluation, "form": form, "needs_counts": NEEDS_COUNTS,
        "runs": run_selectors.runs_of_evaluation(evaluation=evaluation),
    }


@require_GET
@login_required
def evaluation_runs(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """The "Judges" panel the evaluation page loads (htmx); a page of its own without."""
    evaluation = run_selectors.evaluation_for_runs(user=request.user,
                                                   evaluation_id=evaluation_id)
    context = _panel_context(evaluation, RunStartForm(team_id=evaluation.team_id))
    template = "judges/_evaluation_runs.html" if request.htmx else "judges/evaluation_runs.html"
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
@login_required
def run_start(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = run_selectors.evaluation_for_runs(user=request.user,
                                                   evaluation_id=evaluation_id)
    form = RunStartForm(request.POST if request.method == "POST" else None,
                        team_id=evaluation.team_id)
    if request.method == "POST" and form.is_valid():
        try:
            run = runs.run_start(judge=form.cleaned_data["judge"], evaluation=evaluation,
                                 mode=form.cleaned_data["mode"], started_by=request.user,
                                 **form.options())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"{run.judge.name} started on {evaluation.name}.")
            return redirect("judges:run_detail", run_id=run.pk)
    return render(request, "judges/evaluation_runs.html", _panel_context(evaluation, form),
                  status=400 if form.errors else 200)


@require_GET
@login_required
def run_estimate(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """What the run the start form describes would cost (judges.estimates): the estimate
    loads it (htmx); a change of the form asks for the form with it (a clicks grader's
    form has other parts); without htmx, the panel with it."""
    evaluation = run_selectors.evaluation_for_runs(user=request.user,
                                                   evaluation_id=evaluation_id)
    form = RunStartForm(request.GET, team_id=evaluation.team_id)
    estimate = None
    if form.is_valid():
        data = form.cleaned_data
        estimate = estimates.judge_run_estimate(judge=data["judge"], evaluation=evaluation,
                                                mode=data["mode"],
                                                refresh_cache=form.options()["refresh_cache"])
    context = {**_panel_context(evaluation, form), "estimate": estimate}
    if request.htmx:
        part = "_run_start" if request.htmx.target == "judge-run-start" else "_run_estimate"
        return render(request, f"judges/{part}.html", context)
    return render(request, "judges/evaluation_runs.html", context,
                  status=400 if form.errors else 200)


# The page polls its live part every 2 s while the run goes on: a run with thousands of
# failures shows the first ones (the API lists them all).
FAILED_SHOWN = 200


@require_GET
@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run page; its progress part alone for htmx, which polls it while it runs."""
    run = run_selectors.run_get_for_user(user=request.user, run_id=run_id)
    context = {"run": run, "progress": runs.run_progress(run=run),
               "failed_items": run_selectors.failed_items_of_run(run=run, limit=FAILED_SHOWN)}
    if request.htmx:
        return render(request, "judges/_run_live.html", context)
    return render(request, "judges/run_detail.html", context)


ACTIONS = {
    "pause": (runs.run_pause, "Paused: no new batch starts until you resume."),
    "resume": (runs.run_resume, "Resumed."),
    "cancel": (runs.run_cancel, "Cancelled: the pairs not yet answered are left alone."),
    "retry": (runs.run_retry_failed, None),
}


@require_POST
@login_required
def run_action(request: HttpRequest, run_id: int, action: str) -> HttpResponse:
    """Pause, resume, cancel or retry the failed pairs (the URL names the action)."""
    run = run_selectors.run_get_for_user(user=request.user, run_id=run_id)
    service, message = ACTIONS[action]
    options = {}
    if action == "resume" and request.POST.get("budget", "").strip():
        budget = forms.DecimalField(max_digits=12, decimal_places=4)
        try:
            options["budget"] = budget.clean(request.POST["budget"].strip())
        except ValidationError as error:
            messages.error(request, "Budget: " + " ".join(error.messages))
            return redirect("judges:run_detail", run_id=run.pk)
    try:
        result = service(run=run, **options)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        if message is None:
            message = _retried_message(result)
        messages.success(request, message)
    return redirect("judges:run_detail", run_id=run.pk)


def _retried_message(count: int) -> str:
    if not count:
        return "No failed pair to retry."
    return f"{count} failed pair{'s' if count != 1 else ''} asked again."
