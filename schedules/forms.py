"""The schedule form: shape only; the rules (minimum interval, cron, baseline, query set
with keywords…) are schedules.services', whose errors land on the field they name."""

from typing import Any

from django import forms
from django.conf import settings

import metrics_engine as core
from evaluations.forms import MONO, EvaluationForm, parse_metrics
from evaluations.hooks import scale_provider
from evaluations.models import KeywordSet, SearchModel
from evaluations.services.keywords import TAG_SEPARATOR
from metrics_engine.verdicts import MAX_SEGMENT_LENGTH, MAX_SEGMENTS
from schedules.models import Schedule
from schedules.run_judges import counting_judges
from schedules.services import SCHEDULE_FIELDS
from schedules.timing import MIN_INTERVAL_MINUTES
from searchtweak.integers import form_integer
from searchtweak.models import Team


class ScheduleForm(forms.Form):
    name = forms.CharField(max_length=200)
    model = forms.ModelChoiceField(queryset=SearchModel.objects.none(), label="Search model")
    query_set = forms.ModelChoiceField(
        queryset=KeywordSet.objects.none(),
        help_text="Each run evaluates its current version's keywords.")
    scale = forms.ChoiceField()
    strategy = forms.TypedChoiceField(
        coerce=int, choices=EvaluationForm.base_fields["strategy"].choices)
    metrics = forms.CharField(
        widget=forms.Textarea(attrs={**MONO, "rows": 3}),
        initial=EvaluationForm.base_fields["metrics"].initial,
        help_text=EvaluationForm.base_fields["metrics"].help_text)
    interval_minutes = form_integer(
        required=False, min_value=1, label="Every N minutes",
        help_text=f"At least {MIN_INTERVAL_MINUTES}. Or leave empty and give a cron "
                  "expression below.")
    cron = forms.CharField(
        required=False, max_length=100, label="…or a cron expression",
        widget=forms.TextInput(attrs={"class": "mono", "placeholder": "0 6 * * 1-5",
                                      "spellcheck": "false"}),
        help_text="Five fields: minute hour day month weekday, read in the time zone "
                  "below.")
    time_zone = forms.CharField(max_length=64, help_text="An IANA name: UTC, Europe/Berlin…")
    deadline_hours = form_integer(
        initial=24, label="Grading deadline (hours)",
        help_text="A run finishes when every result is graded, or this long after it "
                  "started with what is graded by then.")
    judge_ids = forms.TypedMultipleChoiceField(
        coerce=int, required=False, widget=forms.CheckboxSelectMultiple,
        label="Judges", help_text="Counting judges that grade each run's new results.")
    baseline = forms.ChoiceField(choices=Schedule.Baseline.choices, widget=forms.RadioSelect,
                                 label="Compare each run with")
    min_coverage = forms.FloatField(
        initial=90, min_value=0, max_value=100, label="Minimum coverage (%)",
        help_text="A run with a value for fewer of its keywords is undecided.")
    threshold = forms.FloatField(
        required=False, label="Threshold (optional)",
        help_text="The absolute change of a mean that counts, e.g. 0.01; empty: any "
                  "significant change.")
    segments = forms.CharField(
        required=False, max_length=(MAX_SEGMENT_LENGTH + 3) * MAX_SEGMENTS,
        label="Segments (optional)",
        widget=forms.TextInput(attrs={"class": "mono", "placeholder": "tail | lang:de",
                                      "spellcheck": "false"}),
        help_text=f"Keyword tags, separated by “{TAG_SEPARATOR}”: each run is also judged on "
                  "the keywords carrying each tag (the query set's head, torso and tail "
                  "are tags too).")
    weighted = forms.BooleanField(
        required=False, label="Judge the traffic-weighted means too",
        help_text="Means weighted by how often each keyword is asked (its weight), overall "
                  "and per segment.")
    keep_runs = form_integer(
        initial=10, label="Runs to keep",
        help_text="Older finished runs are archived (never deleted).")

    def __init__(self, *args, team: Team, has_baseline: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].queryset = SearchModel.objects.filter(
            team=team, archived_at=None).order_by("name")
        self.fields["query_set"].queryset = KeywordSet.objects.filter(
            team=team, archived_at=None).order_by("name")
        self.fields["scale"].choices = scale_provider().choices(team)
        self.fields["scale"].initial = "graded"
        self.fields["time_zone"].initial = settings.TIME_ZONE
        # Without a team baseline the team's choice is refused: start from the first run.
        self.fields["baseline"].initial = (Schedule.Baseline.TEAM if has_baseline
                                           else Schedule.Baseline.FIRST)
        judges = counting_judges(team)
        if judges:
            self.fields["judge_ids"].choices = judges
        else:
            del self.fields["judge_ids"]

    @staticmethod
    def initial_for(schedule: Schedule) -> dict[str, Any]:
        return {
            "name": schedule.name, "model": schedule.model_id,
            "query_set": schedule.query_set_id, "scale": schedule.scale,
            "strategy": schedule.strategy,
            "metrics": "\n".join(core.metric_line(metric["code"], metric["k"],
                                                   metric.get("params"))
                                  for metric in schedule.metrics),
            "interval_minutes": schedule.interval_minutes, "cron": schedule.cron,
            "time_zone": schedule.time_zone, "deadline_hours": schedule.deadline_hours,
            "judge_ids": schedule.judge_ids, "baseline": schedule.baseline,
            "min_coverage": _percent(schedule.min_coverage),
            "threshold": schedule.threshold,
            "segments": f" {TAG_SEPARATOR} ".join(schedule.segments),
            "weighted": schedule.weighted, "keep_runs": schedule.keep_runs,
        }

    def clean_metrics(self) -> list[dict[str, Any]]:
        return parse_metrics(self.cleaned_data["metrics"])

    def clean_segments(self) -> list[str]:
        # Typed as one line; the service cleans each tag (and names a bad one).
        return [part for part in self.cleaned_data["segments"].split(TAG_SEPARATOR)
                if part.strip()]

    def clean_min_coverage(self) -> float:
        # Typed as a percent, stored as a share.
        return self.cleaned_data["min_coverage"] / 100

    def service_kwargs(self) -> dict[str, Any]:
        data = {name: self.cleaned_data[name] for name in SCHEDULE_FIELDS
                if name in self.cleaned_data}
        data.setdefault("judge_ids", [])
        return data


def _percent(share: float) -> float | int:
    # 0.9 * 100 is 90.00000000000001: rounded, and a whole number shown without ".0".
    percent = round(share * 100, 2)
    return int(percent) if percent.is_integer() else percent


class SchedulePauseForm(forms.Form):
    # Longer reasons are cut by the service; the page shows what is kept.
    reason = forms.CharField(required=False, label="Reason", widget=forms.TextInput(
        attrs={"placeholder": "reason (optional)", "maxlength": 300}))
