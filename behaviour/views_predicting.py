"""The page "do offline metrics predict behaviour?" of an evaluation (every member reads)."""

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from behaviour.predicting import ONLINE_MEASURES, offline_vs_behaviour, prediction_inputs
from evaluations.selectors import evaluation_get_for_user
from metrics.reports import charts
from searchtweak.integers import ID_MAX, form_integer

K_MAX = 1000


class PredictionForm(forms.Form):
    source = form_integer(min_value=1, max_value=ID_MAX, required=False)
    metric = form_integer(min_value=1, max_value=ID_MAX, required=False)
    online = forms.ChoiceField(choices=list(ONLINE_MEASURES.items()), required=False)
    k = form_integer(min_value=1, max_value=K_MAX, required=False)
    start_on = forms.DateField(required=False)
    end_on = forms.DateField(required=False)

    def clean(self):
        data = super().clean()
        if data.get("start_on") and data.get("end_on") and data["start_on"] > data["end_on"]:
            self.add_error("end_on", "The window ends before it starts.")
        return data


@require_GET
@login_required
def evaluation_behaviour_fit(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
    form = PredictionForm(request.GET)
    context = {"evaluation": evaluation, "form": form}
    if form.is_valid():
        data = form.cleaned_data
        inputs = prediction_inputs(user=request.user, evaluation=evaluation,
                                   source_id=data["source"], metric_id=data["metric"])
        context.update(sources=inputs.sources, metrics=inputs.metrics, source=inputs.source,
                       metric=inputs.metric)
        if inputs.source is not None and inputs.metric is not None:
            found = offline_vs_behaviour(
                evaluation=evaluation, source=inputs.source, metric=inputs.metric,
                online=data["online"] or "ctr", k=data["k"] or 10,
                start_on=data["start_on"], end_on=data["end_on"])
            apart = {point.keyword_id for point in found.disagreeing}
            context.update(prediction=found, scatter=mark_safe(charts.scatter_chart(
                [(p.text, p.offline, p.online) for p in found.points],
                marked=[p.keyword_id in apart for p in found.points],
                x_name=found.metric_label, y_name=found.online_label,
                label=f"{found.metric_label} against {found.online_label} per keyword")))
    return render(request, "behaviour/evaluation_behaviour_fit.html", context,
                  status=200 if form.is_valid() else 400)
