"""Forms of judge administration: a judge's settings and the Test action's sample pairs.
They check shape; judges.services enforces the rules."""

import json
from typing import Any

from django import forms

from judges.core.prompts import PLACEHOLDERS, Document, default_template
from judges.models import CALLED_PROVIDER_CHOICES, Judge
from judges.services import DEFAULT_BASE_URLS
from judges.trial_calls import MAX_TEST_DOCUMENTS
from judgments import scales as scale_lookup
from judgments.scales import GradeScale
from searchtweak.integers import form_integer
from searchtweak.json_input import JSONInputError, json_loads
from searchtweak.models import Team

TEMPLATE_PREFIX = "prompt_templates_"


def parse_json_text(text: str) -> Any:
    """JSON as typed in a textarea; the error names the line and column."""
    try:
        return json_loads(text)
    except JSONInputError as error:
        raise forms.ValidationError(error.message) from None


class JudgeOwnFields(forms.Form):
    """The fields every judge's form has, whatever grades it: its name, routing tags and
    whether it is active (JudgeForm, and behaviour's clicks grader form)."""

    name = forms.CharField(max_length=100)
    tags = forms.CharField(required=False, max_length=500,
                           help_text="Routing tags, comma-separated: like a grader, the judge "
                                     "gets an evaluation's work only when it carries all of "
                                     "its tags.")
    is_active = forms.BooleanField(required=False, initial=True, label="Active")

    @staticmethod
    def own_initial(judge: Judge) -> dict[str, Any]:
        return {"name": judge.name, "tags": ", ".join(judge.tags or []),
                "is_active": judge.is_active}

    def clean_tags(self) -> list[str]:
        return [tag for tag in self.cleaned_data["tags"].split(",") if tag.strip()]


class JudgeForm(JudgeOwnFields):
    field_order = ["name", "provider", "base_url", "model", "api_key", "batch_size",
                   "parameters", "tags"]
    provider = forms.ChoiceField(choices=CALLED_PROVIDER_CHOICES)
    base_url = forms.CharField(
        max_length=500, required=False, label="Base URL",
        help_text="Empty: the provider's own (" + ", ".join(
            f"{Judge.Provider(kind).label}: {url}" for kind, url in DEFAULT_BASE_URLS.items())
        + "). Any OpenAI-compatible server works: vLLM, llama.cpp, LM Studio, Groq, "
          "Mistral, DeepSeek, OpenRouter, Azure's v1 API.")
    model = forms.CharField(max_length=200, help_text="e.g. gpt-4o-mini, claude-sonnet-4-5, "
                                                      "llama3.1:8b")
    api_key = forms.CharField(
        required=False, strip=True, label="API key",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again.")
    batch_size = forms.IntegerField(min_value=1, max_value=20, initial=5,
                                    help_text="Documents per call, 1 to 20.")
    parameters = forms.CharField(
        required=False, initial="{}", widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
        help_text='Model parameters sent with every call, a JSON object, e.g. '
                  '{"temperature": 0, "max_tokens": 2000}.')
    allow_cross_origin_redirects = forms.BooleanField(
        required=False, label="Follow redirects to other origins",
        help_text="Same-origin redirects are always followed. A redirect to another origin "
                  "is followed only with this, and never carries the API key.")
    send_images = forms.BooleanField(
        required=False, label="Send images",
        help_text="Each result's image goes with the prompt when its template has "
                  "{{images}}: by URL to OpenAI-compatible and Anthropic judges; fetched "
                  "here and sent inline to Ollama.")
    timeout_seconds = forms.FloatField(initial=60.0, min_value=0.1, label="Timeout (seconds)")
    max_retries = forms.IntegerField(initial=3, min_value=0, max_value=10)
    max_concurrent_requests = form_integer(
        initial=16, min_value=1, help_text="Calls at once, over all workers together.")
    requests_per_minute = form_integer(
        required=False, min_value=1, help_text="Calls started per minute; empty: no limit.")
    price_in_per_million = forms.DecimalField(
        required=False, min_value=0, max_digits=10, decimal_places=4,
        label="Price per 1M input tokens", help_text="Optional, to show cost.")
    price_out_per_million = forms.DecimalField(
        required=False, min_value=0, max_digits=10, decimal_places=4,
        label="Price per 1M output tokens")
    price_currency = forms.CharField(
        required=False, initial="USD", max_length=3, label="Currency of the prices",
        help_text="A currency code (USD, EUR, ...), shown beside every cost; empty: USD.")

    def __init__(self, *args: Any, team: Team, judge: Judge | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.judge = judge
        self.scales: list[GradeScale] = scale_lookup.scales_for_team(team_id=team.pk)
        if judge is not None:
            self.fields["api_key"].widget.attrs["placeholder"] = (
                "A key is set: leave empty to keep it" if judge.api_key_encrypted
                else "No key set")
            if judge.api_key_encrypted:
                self.fields["clear_api_key"] = forms.BooleanField(
                    required=False, label="Remove the stored key")
                self.order_fields(["name", "provider", "base_url", "model", "api_key",
                                   "clear_api_key"])
        else:
            self.fields["api_key"].widget.attrs["placeholder"] = "No key set"
        stored = (judge.prompt_templates if judge else None) or {}
        for grade_scale in self.scales:
            self.fields[TEMPLATE_PREFIX + grade_scale.code] = forms.CharField(
                required=False, strip=False, label=f"Prompt for {grade_scale.describe()}",
                initial=stored.get(grade_scale.code) or default_template(grade_scale.scale),
                widget=forms.Textarea(attrs={"rows": 12, "class": "mono"}),
                help_text="Placeholders: " + ", ".join(f"{{{{{name}}}}}" for name in
                                                       PLACEHOLDERS)
                + ". Empty, or left as shipped: the shipped default.")

    def template_fields(self) -> list[forms.BoundField]:
        return [self[TEMPLATE_PREFIX + grade_scale.code] for grade_scale in self.scales]

    def settings_fields(self) -> list[forms.BoundField]:
        return [field for field in self if not field.name.startswith(TEMPLATE_PREFIX)]

    @staticmethod
    def initial_for(judge: Judge) -> dict[str, Any]:
        return {
            **JudgeOwnFields.own_initial(judge),
            "provider": judge.provider, "base_url": judge.base_url,
            "model": judge.model, "batch_size": judge.batch_size,
            "parameters": json.dumps(judge.parameters or {}, indent=2, ensure_ascii=False),
            "allow_cross_origin_redirects": judge.allow_cross_origin_redirects,
            "send_images": judge.send_images,
            "timeout_seconds": judge.timeout_seconds, "max_retries": judge.max_retries,
            "max_concurrent_requests": judge.max_concurrent_requests,
            "requests_per_minute": judge.requests_per_minute,
            "price_in_per_million": judge.price_in_per_million,
            "price_out_per_million": judge.price_out_per_million,
            "price_currency": judge.price_currency,
        }

    def clean_price_currency(self) -> str:
        return self.cleaned_data["price_currency"].strip() or "USD"

    def clean_parameters(self) -> Any:
        text = self.cleaned_data["parameters"].strip()
        return parse_json_text(text) if text else {}

    def service_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        kwargs = {name: data[name] for name in (
            "name", "provider", "base_url", "model", "api_key", "batch_size", "parameters",
            "tags", "is_active", "allow_cross_origin_redirects", "timeout_seconds",
            "max_retries", "max_concurrent_requests", "requests_per_minute",
            "price_in_per_million", "price_out_per_million", "price_currency",
            "send_images")}
        kwargs["prompt_templates"] = {grade_scale.code: data[TEMPLATE_PREFIX + grade_scale.code]
                                      for grade_scale in self.scales}
        if "clear_api_key" in self.fields:
            kwargs["clear_api_key"] = data["clear_api_key"]
        return kwargs


SAMPLE_DOCUMENTS = "\n".join(json.dumps(line, ensure_ascii=False) for line in (
    {"id": "d1", "fields": {"title": "Trail running shoes, men's", "price": "89.00"}},
    {"id": "d2", "fields": {"title": "Leather office shoes", "price": "120.00"}},
))


class JudgeTestForm(forms.Form):
    keyword = forms.CharField(max_length=500, initial="running shoes")
    guidelines = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    scale = forms.ChoiceField()
    documents = forms.CharField(
        initial=SAMPLE_DOCUMENTS, widget=forms.Textarea(attrs={"rows": 6, "class": "mono"}),
        help_text=f'1 to {MAX_TEST_DOCUMENTS} documents, one JSON object per line: '
                  '{"id": "d1", "fields": {"title": "..."}}, or just the fields '
                  '{"title": "..."} (the id is then d1, d2, ...).')

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        scales = scale_lookup.scales_for_team(team_id=team.pk)
        self.fields["scale"].choices = [(s.code, s.describe()) for s in scales]
        self.fields["scale"].initial = "graded"

    def clean_documents(self) -> list[Document]:
        documents = []
        lines = self.cleaned_data["documents"].splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                value = json_loads(line)
            except JSONInputError as error:
                syntax = error.decode_error
                raise forms.ValidationError(
                    f"Line {number}: not valid JSON at column {syntax.colno}: {syntax.msg}."
                    if syntax else f"Line {number}: {error.message}") from None
            if not isinstance(value, dict):
                raise forms.ValidationError(f"Line {number}: write a JSON object {{...}}.")
            documents.append(_document(value, len(documents) + 1, number))
        if not 1 <= len(documents) <= MAX_TEST_DOCUMENTS:
            raise forms.ValidationError(
                f"Give 1 to {MAX_TEST_DOCUMENTS} documents, one a line ({len(documents)} given).")
        return documents


def _document(value: dict[str, Any], position: int, line: int) -> Document:
    explicit = "fields" in value and set(value) <= {"id", "fields"}
    fields = value["fields"] if explicit else {k: v for k, v in value.items() if k != "id"}
    if not isinstance(fields, dict):
        raise forms.ValidationError(f'Line {line}: "fields" must be an object.')
    doc_id = value.get("id", f"d{position}")
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or not str(doc_id):
        raise forms.ValidationError(f'Line {line}: "id" must be a string.')
    return Document(id=str(doc_id), fields=fields)


class TrustPolicyForm(forms.Form):
    """The team's bar for letting a judge's grades count (judges.trust)."""

    min_pairs = forms.IntegerField(
        label="Pairs at least", min_value=1, max_value=100_000,
        help_text="Judge x person pairs on the evaluation it shadowed.")
    min_kappa = forms.FloatField(
        label="κ at least", min_value=-1, max_value=1,
        help_text="Cohen's κ, quadratic-weighted on scales of more than two grades.")
    monthly_budget = forms.DecimalField(
        label="Monthly budget", required=False, min_value=0, max_digits=12, decimal_places=4,
        help_text="Optional: the most the team's judge runs may spend a calendar month, at "
                  "the judges' prices; a run pauses before a call would pass it.")
    monthly_budget_currency = forms.CharField(
        label="Budget currency", initial="USD", max_length=3, required=False,
        help_text="The budget's currency. A judge priced in another makes no call while "
                  "the budget is set (there are no exchange rates).")

    def clean_monthly_budget_currency(self) -> str:
        return self.cleaned_data["monthly_budget_currency"].strip() or "USD"
