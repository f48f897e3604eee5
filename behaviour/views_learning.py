"""The page that makes a clicks grader (admins, as for LLM judges): a judge of provider
"clicks" that learns its grades from a behaviour source (behaviour.learning)."""

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from behaviour import learning
from behaviour.models import BehaviourSource, ClickGrader
from evaluations.selectors import CONFIGURATION_ROLE
from searchtweak.views_shared import current_team, form_saved_response


class ClickGraderForm(forms.Form):
    name = forms.CharField(max_length=100)
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

    def __init__(self, *args, team, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["source"].queryset = BehaviourSource.objects.filter(team=team)

    def clean_cuts(self) -> list[float]:
        text = self.cleaned_data["cuts"].strip()
        if not text:
            return []
        try:
            return [float(part) for part in text.replace(";", ",").split(",") if part.strip()]
        except ValueError:
            raise forms.ValidationError("Numbers separated by commas.") from None


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
    return saved or render(request, "behaviour/click_grader_form.html", {"form": form},
                           status=400 if form.errors else 200)
