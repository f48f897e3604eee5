"""Forms of the run pages: starting a run on an evaluation, and filtering a call log."""

from decimal import Decimal
from typing import Any

from django import forms

from judges import run_selectors
from judges.models import Judge, JudgeRun

COUNTING_MODES = (JudgeRun.Mode.UNGRADED, JudgeRun.Mode.FILL)
NEEDS_COUNTS = ("Needs a judge that counts: a judge counts once a shadow run has measured it "
                "against your graders.")


# Fields only a judge that calls a model has: a clicks grader has no cache and costs nothing.
LLM_ONLY = ("refresh_cache", "budget")


def judge_kind_label(judge: Judge) -> str:
    """What a judge is, as the picker says it: "LLM · <provider> <model>" or
    "clicks · <model> on <source>" (a clicks judge with its click_grader and source
    loaded)."""
    if judge.provider == Judge.Provider.CLICKS:
        grader = judge.click_grader
        return f"clicks · {grader.click_model.upper()} on {grader.source.name}"
    return f"LLM · {judge.provider} {judge.model}"


class _JudgeSelect(forms.Select):
    """Each judge's option says whether it counts (data-counts), so static/judges/runs.js
    can disable the counting modes for one that does not."""

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        judge = getattr(value, "instance", None)
        if isinstance(judge, Judge):
            option["attrs"]["data-counts"] = "1" if judge.counts else "0"
        return option


class _ModeSelect(forms.Select):
    """The counting modes carry data-needs-counts; disabled outright when no judge counts."""

    def __init__(self, *args: Any, any_counts: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.any_counts = any_counts

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if value in COUNTING_MODES:
            option["attrs"]["data-needs-counts"] = "1"
            option["attrs"]["title"] = NEEDS_COUNTS
            if not self.any_counts:
                option["attrs"]["disabled"] = True
        return option


class RunStartForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=Judge.objects.none(), widget=_JudgeSelect,
                                   empty_label=None)
    mode = forms.ChoiceField(choices=JudgeRun.Mode.choices, initial=JudgeRun.Mode.SHADOW)
    refresh_cache = forms.BooleanField(
        required=False, label="Ask again even if cached",
        help_text="Without it, an answer the judge gave before to the same question is reused.")
    budget = forms.DecimalField(
        required=False, min_value=Decimal("0.0001"), max_digits=12, decimal_places=4,
        label="Budget",
        help_text="Optional, in the judge's currency: the run pauses before a call would "
                  "take its cost over it.")

    def __init__(self, *args: Any, team_id: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judges = run_selectors.judges_for_start(team_id=team_id)
        self.fields["judge"].queryset = judges
        self.fields["judge"].label_from_instance = (
            lambda judge: f"{judge.name} — {judge_kind_label(judge)}")
        self.judges = list(judges)
        self.chosen = self._chosen_judge()
        if self.chosen is not None and self.chosen.provider == Judge.Provider.CLICKS:
            for name in LLM_ONLY:
                del self.fields[name]
        self.non_counting = [judge.name for judge in self.judges if not judge.counts]
        self.fields["mode"].widget = _ModeSelect(
            choices=self.fields["mode"].choices,
            any_counts=any(judge.counts for judge in self.judges))

    def _chosen_judge(self) -> Judge | None:
        """The judge the form is for: the one sent, else the first offered. A clicks
        grader's form has no LLM_ONLY fields (what it learns from is shown instead)."""
        if not self.judges:
            return None
        sent = str(self.data.get("judge", "")) if self.is_bound else ""
        return next((judge for judge in self.judges if str(judge.pk) == sent), self.judges[0])

    def options(self) -> dict[str, Any]:
        """What run_start takes besides judge and mode, with the defaults of a form
        without them (a clicks grader's)."""
        return {"refresh_cache": self.cleaned_data.get("refresh_cache", False),
                "budget": self.cleaned_data.get("budget")}


class CallFilterForm(forms.Form):
    """GET filters of a judge's call log (the page and its JSONL export)."""

    TEST_CHOICES = (("", "Runs and tests"), ("false", "Run calls only"),
                    ("true", "Test calls only"))

    run = forms.ModelChoiceField(queryset=JudgeRun.objects.none(), required=False,
                                 empty_label="Any run")
    status = forms.ChoiceField(required=False, choices=(
        ("", "Any status"), *((status, status) for status in run_selectors.CALL_STATUSES)))
    is_test = forms.ChoiceField(required=False, choices=TEST_CHOICES, label="Calls")
    started_from = forms.DateField(required=False, label="From",
                                   widget=forms.DateInput(attrs={"type": "date"}))
    started_to = forms.DateField(required=False, label="To",
                                 widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args: Any, judge: Judge, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = run_selectors.runs_of_judge(judge=judge)
        self.fields["run"].label_from_instance = (
            lambda run: f"#{run.pk} {run.evaluation.name} ({run.get_mode_display()})")

    def filters(self) -> run_selectors.CallFilters:
        """The filters of a valid form (call is_valid first)."""
        data = self.cleaned_data
        return run_selectors.CallFilters(
            run_id=data["run"].pk if data["run"] else None, status=data["status"],
            is_test={"true": True, "false": False}.get(data["is_test"]),
            started_from=data["started_from"], started_to=data["started_to"])
