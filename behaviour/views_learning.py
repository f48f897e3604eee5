"""The pages that make and edit a clicks grader (admins, as for LLM judges): a judge of
provider "clicks" that learns its grades from a behaviour source (behaviour.learning)."""

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from behaviour import learning
from behaviour.models import BehaviourSource, ClickGrader
from behaviour.selectors import click_grader_get_for_user
from evaluations.selectors import CONFIGURATION_ROLE
from judges.forms import JudgeOwnFields
from searchtweak.views_shared import current_team, form_saved_response


class ClickGraderForm(JudgeOwnFields):
    field_order = ["name", "source", "click_model", "start_on", "end_on", "min_impressions",
                   "cuts", "tags", "is_active"]
    source = forms.ModelChoiceField(queryset=BehaviourSource.objects.none(),
                                    label="Behaviour source")
    click_model = forms.ChoiceField(choices=ClickGrader.Model.choices, label="Click model")
    start_on = forms.DateField(required=False, label="From (day)",
                               help_text="Empty: from the source's first day.")
    end_on = forms.DateField(required=False, label="To (day)",
                             help_text="Empty: to its last. A CSV has no days: leave both "
                                       "empty.")
    min_impressions = forms.IntegerField(min_value=1, max_value=learning.MAX_MIN_IMPRESSIONS,
                                         initial=10, label="Minimum impressions",
                                         help_text="A result shown fewer times gets no grade.")
    cuts = forms.CharField(
        required=False, label="Cut points",
        help_text="Empty: even cuts (graded 0..3: .25, .5, .75). Else n - 1 rising numbers "
                  "between 0 and 1 for a scale of n grades, e.g. 0.1, 0.2, 0.4.")

    def __init__(self, *args: Any, team, grader: ClickGrader | None = None,
                 **kwargs: Any) -> None:
        if grader is not None:
            kwargs["initial"] = {
                **self.own_initial(grader.judge), "source": grader.source_id,
                "click_model": grader.click_model, "start_on": grader.start_on,
                "end_on": grader.end_on, "min_impressions": grader.min_impressions,
                "cuts": ", ".join(f"{cut:g}" for cut in grader.cuts)}
        super().__init__(*args, **kwargs)
        self.fields["source"].queryset = BehaviourSource.objects.filter(team=team)
        if grader is None:
            del self.fields["is_active"]  # a new grader is active

    def clean_cuts(self) -> list[float]:
        text = self.cleaned_data["cuts"].strip()
        if not text:
            return []
        try:
            return [float(part) for part in text.replace(";", ",").split(",") if part.strip()]
        except ValueError:
            raise forms.ValidationError("Numbers separated by commas.") from None


def _render_form(request: HttpRequest, form: ClickGraderForm,
                 grader: ClickGrader | None = None) -> HttpResponse:
    return render(request, "behaviour/click_grader_form.html",
                  {"form": form, "grader": grader}, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def click_grader_create(request: HttpRequest) -> HttpResponse:
    team = current_team(request, CONFIGURATION_ROLE)
    form = ClickGraderForm(request.POST or None, team=team)
    saved = form_saved_response(
        request, form, lambda: learning.click_grader_create(team=team, by=request.user,
                                                            **form.cleaned_data),
        success=lambda grader: f"Clicks grader {grader.judge.name} created. Run it in shadow "
                               "mode on an evaluation, then read its calibration.",
        next_url=lambda grader: reverse("judges:judge_list"))
    return saved or _render_form(request, form)


@require_http_methods(["GET", "POST"])
@login_required
def click_grader_edit(request: HttpRequest, judge_id: int) -> HttpResponse:
    grader = click_grader_get_for_user(user=request.user, judge_id=judge_id,
                                       minimum_role=CONFIGURATION_ROLE)
    form = ClickGraderForm(request.POST or None, team=grader.judge.team, grader=grader)
    saved = form_saved_response(
        request, form, lambda: learning.click_grader_update(grader=grader, by=request.user,
                                                            **form.cleaned_data),
        success=lambda saved: f"Clicks grader {saved.judge.name} saved. Its next run learns "
                              "with these settings; the grades learned already keep theirs.",
        next_url="judges:judge_list")
    return saved or _render_form(request, form, grader)
