"""Forms of the evaluation pages: shape only; rules are services'. MONO and KEYWORDS_HELP
serve the other pages' forms too."""

import json
from typing import Any

from django import forms
from django.conf import settings
from django.utils.functional import lazy

import metrics_engine as core
from evaluations.hooks import scale_provider
from evaluations.models import Evaluation, EvaluationMetric, KeywordSet, SearchModel
from evaluations.query_sets.file_formats import KINDS
from evaluations.selectors import evaluation_keyword_entries
from evaluations.services.keyword_input import keyword_upload_size_problem, keywords_as_text
from evaluations.strategies import ADAPTIVE_STRATEGY
from searchtweak.integers import bounded
from searchtweak.json_input import JSONInputError, json_loads
from searchtweak.models import Team

MONO = {"class": "mono", "rows": 4, "spellcheck": "false"}


def _keywords_help() -> str:
    return (f"One per line (up to {settings.MAX_KEYWORDS:,}), optionally with how often it "
            "is asked and tags: keyword,weight,tags (e.g. running shoes,1200,head|lang:en; "
            "quote a keyword holding a comma). Duplicates and blank lines are removed, extra "
            "spaces too.")


UPLOAD_HELP = ("Plain text (one keyword a line), CSV keyword,weight,tags with a header, "
               "Quepid's basic CSV export (its queries) or an OpenSearch Workbench query set "
               "(NDJSON queryText lines), read as a query set's file is. The page says what "
               "the file was read as.")


# Read when shown, so the help follows settings.MAX_KEYWORDS as the parser does.
KEYWORDS_HELP = lazy(_keywords_help, str)()


def parse_metrics(text: str) -> list[dict[str, Any]]:
    """'ndcg@10 gain=exponential' lines into [{"code", "k", "params"}]; the names people
    type ('P@10', 'map@10', 'ndcg_cut_10') become the registry's codes."""
    metrics = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words:
            continue
        try:
            code, k = core.resolve_metric_name(words[0])
        except core.MetricInputError as error:
            raise forms.ValidationError(f"Line {number}: {error.problem}") from None
        if k is None:
            raise forms.ValidationError(f"Line {number}: write code@k, e.g. ndcg@10.")
        try:
            bounded(k, field="k", min_value=1, max_value=EvaluationMetric.K_MAX)
        except forms.ValidationError as error:
            raise forms.ValidationError(f"Line {number}: {error.messages[0]}") from None
        params: dict[str, Any] = {}
        for word in words[1:]:
            name, equals, value = word.partition("=")
            if not equals:
                raise forms.ValidationError(f"Line {number}: write parameters as name=value.")
            try:
                params[name] = float(value) if name == "beta" else value
            except ValueError:
                raise forms.ValidationError(f"Line {number}: beta must be a number.") from None
        metrics.append({"code": code, "k": k, "params": params})
    return metrics


def format_metrics(configs) -> str:
    return "\n".join(core.metric_line(config.code, config.k, config.params)
                     for config in configs)


class EvaluationForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    model = forms.ModelChoiceField(queryset=SearchModel.objects.none(), label="Search model")
    keywords = forms.CharField(
        # Not stripped: blank lines before the first keyword keep error line numbers right.
        required=False, strip=False, widget=forms.Textarea(attrs={**MONO, "rows": 8}),
        help_text=KEYWORDS_HELP)
    keywords_file = forms.FileField(
        required=False, label="…or upload keywords", help_text=UPLOAD_HELP)
    keywords_format = forms.ChoiceField(
        required=False, choices=list(KINDS.items()), initial="auto", label="File format",
        help_text="Recognised from the file unless you choose one.")
    scale = forms.ChoiceField()
    strategy = forms.TypedChoiceField(coerce=int, choices=[
        (1, "1 grader per result"), (3, "3 graders per result"),
        (ADAPTIVE_STRATEGY, "1 grader, up to 3 where it matters")])
    metrics = forms.CharField(
        widget=forms.Textarea(attrs={**MONO, "rows": 4}), initial="precision@10\nap@10\nndcg@10",
        help_text="One per line: code@k then optional parameters, e.g. "
                  "'ndcg@10 gain=exponential ideal=pool'. The usual names work too "
                  "(P@10, map@10, mrr@10, ndcg_cut_10) and are stored as the codes.")
    transformers = forms.CharField(
        required=False, widget=forms.Textarea(attrs={**MONO, "rows": 3}),
        label="Transformer overrides (JSON, optional)",
        help_text='e.g. {"graded->binary": {"0": 0, "1": 0, "2": 1, "3": 1}}')
    tags = forms.CharField(
        required=False, max_length=500, label="Grader routing tags",
        help_text="Comma-separated. Only graders carrying all of these tags get this "
                  "evaluation's results; leave empty to hand them to every member.")
    guidelines = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                 help_text="Shown to graders.")
    reuse_grades = forms.ChoiceField(choices=Evaluation.Reuse.choices,
                                     label="Reuse earlier grades")
    show_position = forms.BooleanField(
        required=False, label="Show graders each result's position",
        help_text="Off by default: knowing the engine ranked a result first can sway a grade.")
    shuffle_results = forms.BooleanField(
        required=False, label="Shuffle each keyword's results per grader",
        help_text="Each grader gets a keyword's results in their own random order (the same "
                  "on every visit) and never sees the engine's position; calibration then "
                  "reports agreement by the position a result was shown at.")
    grading_order = forms.ChoiceField(
        choices=Evaluation.GradingOrder.choices, initial=Evaluation.GradingOrder.POSITION,
        required=False, label="Grading order",
        help_text="\"Grade what decides first\" hands out first the top results of the "
                  "keywords whose metric is least settled (widest bounds), so a comparison "
                  "is decided with fewer grades. Not with shuffled results.")
    gold_rate = forms.FloatField(
        required=False, min_value=0, max_value=50, initial=5,
        label="Gold items, % of each grader's results",
        help_text="Results with a known answer slipped into graders' work, on the grading "
                  "page and through the grading API alike, to measure them; their grades "
                  "never count in metrics. 0 turns them off.")
    second_grader_below_gold_bar = forms.BooleanField(
        required=False, label="A second grader where a grader is below the gold bar",
        help_text="Under \"1 grader, up to 3 where it matters\": a result graded only by "
                  "graders who answer the team's gold items badly gets another grader.")
    auto_finish = forms.BooleanField(
        required=False, initial=True, label="Finish when every result is graded")
    # --- query sets: on the create page only (with_query_sets) ---
    query_set = forms.ModelChoiceField(
        queryset=KeywordSet.objects.none(), required=False, label="…or use a query set",
        help_text="Its current version's keywords, instead of typing or uploading them.")
    save_as_query_set = forms.CharField(
        required=False, max_length=200, label="Save these keywords as a query set named…",
        help_text="Optional: typed or uploaded keywords become a reusable query set.")

    def __init__(self, *args, team: Team, frozen: bool = False,
                 with_query_sets: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].queryset = SearchModel.objects.filter(team=team, archived_at=None)
        if with_query_sets:
            self.fields["query_set"].queryset = KeywordSet.objects.filter(
                team=team, archived_at=None).order_by("name")
            self.order_fields(["name", "description", "model", "keywords", "keywords_file",
                               "keywords_format", "save_as_query_set", "query_set"])
        else:
            del self.fields["query_set"], self.fields["save_as_query_set"]
        self.fields["scale"].choices = scale_provider().choices(team)
        self.fields["scale"].initial = "graded"
        if frozen:
            for name in ("scale", "strategy", "transformers", "model"):
                self.fields[name].disabled = True
                self.fields[name].help_text = "Frozen once the evaluation has started."

    @staticmethod
    def initial_for(evaluation: Evaluation) -> dict[str, Any]:
        return {
            "name": evaluation.name, "description": evaluation.description,
            "model": evaluation.model_id, "scale": evaluation.scale,
            "strategy": evaluation.strategy,
            "keywords": keywords_as_text(evaluation_keyword_entries(evaluation=evaluation)),
            "metrics": format_metrics(evaluation.metric_configs.order_by("position", "id")),
            "transformers": json.dumps(evaluation.transformers) if evaluation.transformers
            else "",
            "tags": ", ".join(evaluation.tags), "guidelines": evaluation.guidelines,
            "reuse_grades": evaluation.reuse_grades,
            "show_position": evaluation.show_position, "auto_finish": evaluation.auto_finish,
            "shuffle_results": evaluation.shuffle_results,
            "grading_order": evaluation.grading_order,
            "gold_rate": round(evaluation.gold_rate * 100, 4),
            "second_grader_below_gold_bar": evaluation.second_grader_below_gold_bar,
        }

    def clean_gold_rate(self) -> float:
        # The page asks for a percentage; the evaluation stores a share. Not sent (an
        # older page, a script): the default 5 %.
        percent = self.cleaned_data["gold_rate"]
        return 0.05 if percent is None else percent / 100

    def clean_grading_order(self) -> str:
        # Not sent (an older page, a script): the default order.
        return self.cleaned_data["grading_order"] or Evaluation.GradingOrder.POSITION

    def clean_keywords_file(self) -> Any:
        upload = self.cleaned_data.get("keywords_file")
        # Checked before a byte is parsed: the size is known from the request.
        problem = upload and keyword_upload_size_problem(filename=upload.name, size=upload.size)
        if problem:
            raise forms.ValidationError(problem)
        return upload

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if "query_set" in self.fields:
            keywords_source_check(self, data)
        return data

    def clean_metrics(self) -> list[dict[str, Any]]:
        return parse_metrics(self.cleaned_data["metrics"])

    def clean_transformers(self) -> dict:
        text = self.cleaned_data["transformers"]
        if isinstance(text, dict):  # a disabled field hands back its initial value
            return text
        if not text or not text.strip():
            return {}
        try:
            value = json_loads(text)
        except JSONInputError as error:
            raise forms.ValidationError(error.message) from None
        if not isinstance(value, dict):
            raise forms.ValidationError('Write an object, e.g. {"graded->binary": {...}}.')
        return value

    def clean_tags(self) -> list[str]:
        return [tag.strip() for tag in self.cleaned_data["tags"].split(",") if tag.strip()]


def keywords_source_check(form: forms.Form, data: dict[str, Any]) -> None:
    """One source of keywords: typed and/or uploaded, or a query set, not both. (Neither
    is the service's "Add at least one keyword." on `keywords`, as without query sets.)"""
    typed = bool((data.get("keywords") or "").strip() or data.get("keywords_file"))
    if data.get("query_set") is not None:
        if typed:
            form.add_error("query_set", "Choose a query set or type/upload keywords, not both.")
        if (data.get("save_as_query_set") or "").strip():
            form.add_error("save_as_query_set",
                           "The keywords are the query set's already; leave this empty.")


def metric_catalog() -> list[dict[str, str]]:
    """The engine's metrics with their descriptions, for the form's reference table."""
    return [{"code": spec.code, "name": spec.name, "scale": spec.scale,
             "description": spec.description, "params": ", ".join(spec.params)}
            for spec in core.METRICS.values()]
