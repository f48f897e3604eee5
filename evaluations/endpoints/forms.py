"""Forms of the endpoint and search model pages: shape only; rules are the services'."""

from typing import Any

from django import forms

from evaluations import crypto
from evaluations.endpoints.mapper import PRESETS, mapper_problems, preset_mapper
from evaluations.endpoints.services import LIMIT_MAXIMUMS, http_url_problem
from evaluations.forms import MONO
from evaluations.models import Endpoint, SearchModel
from searchtweak.models import Team


def parse_pairs(text: str, *, separator: str, field: str) -> dict[str, str]:
    """'Name: value' (or 'name=value') lines into a dict; blank lines are skipped."""
    pairs: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if separator not in line:
            raise forms.ValidationError(f"Line {number}: write {field}{separator}value.")
        name, value = line.split(separator, 1)
        pairs[name.strip()] = value.strip()
    return pairs


def format_pairs(pairs: dict[str, Any], *, separator: str) -> str:
    return "\n".join(f"{name}{separator}{value}" for name, value in pairs.items())


class EndpointForm(forms.Form):
    name = forms.CharField(max_length=100)
    # Not required here: the demo preset fills it (clean) with the demo engine's address.
    url = forms.CharField(label="URL", max_length=2000, required=False,
                          widget=forms.URLInput(attrs={"placeholder": "https://search.example.com/products/_search"}))
    method = forms.ChoiceField(choices=Endpoint.Method.choices)
    timeout_seconds = forms.FloatField(label="Timeout (seconds)", initial=10, min_value=0.1)
    headers = forms.CharField(
        required=False, widget=forms.Textarea(attrs=MONO),
        help_text="One 'Name: value' per line. Authorization, API keys and tokens are stored "
                  "encrypted automatically.")
    secret_headers = forms.CharField(
        required=False, widget=forms.Textarea(attrs=MONO),
        help_text="Encrypted at rest and shown masked; keep a masked value to keep the secret.")
    max_concurrent_requests = forms.IntegerField(
        label="At most this many requests at once", required=False, min_value=1, initial=16,
        max_value=LIMIT_MAXIMUMS["max_concurrent_requests"],
        help_text="Counted over all workers together. Empty: no limit.")
    requests_per_minute = forms.IntegerField(
        label="At most this many requests a minute", required=False, min_value=1,
        max_value=LIMIT_MAXIMUMS["requests_per_minute"],
        help_text="Counted over all workers together. Empty: no limit.")
    allow_cross_origin_redirects = forms.BooleanField(
        label="Follow redirects to other hosts", required=False,
        help_text="Off: a redirect to another host is an error. On: it is followed, but "
                  "without any of the headers above, so secrets never leave this host.")
    preset = forms.ChoiceField(
        required=False, label="Mapper preset",
        choices=[("", "— custom —")] + [(key, p["label"]) for key, p in PRESETS.items()],
        help_text="Fills the empty mapper fields below; the demo engine also fills the URL.")
    mapper_documents = forms.CharField(label="Documents (JMESPath to the list)", required=False,
                                       widget=forms.TextInput(attrs={"class": "mono"}))
    mapper_id = forms.CharField(label="Document id", required=False,
                                widget=forms.TextInput(attrs={"class": "mono"}))
    mapper_name = forms.CharField(label="Document name", required=False,
                                  widget=forms.TextInput(attrs={"class": "mono"}))
    mapper_image = forms.CharField(label="Document image (optional)", required=False,
                                   widget=forms.TextInput(attrs={"class": "mono"}))
    mapper_fields = forms.CharField(
        label="Extra fields (optional)", required=False, widget=forms.Textarea(attrs=MONO),
        help_text="One 'Label: expression' per line, shown to graders beside each result.")

    def __init__(self, *args, demo_url: str = "", **kwargs) -> None:
        """demo_url: where this site serves /demo/search, for the demo preset."""
        super().__init__(*args, **kwargs)
        self.demo_url = demo_url

    @staticmethod
    def initial_for(endpoint: Endpoint, secrets: dict[str, str]) -> dict[str, Any]:
        mapper = endpoint.mapper
        return {
            "name": endpoint.name, "url": endpoint.url, "method": endpoint.method,
            "timeout_seconds": endpoint.timeout_seconds,
            "max_concurrent_requests": endpoint.max_concurrent_requests,
            "requests_per_minute": endpoint.requests_per_minute,
            "allow_cross_origin_redirects": endpoint.allow_cross_origin_redirects,
            "headers": format_pairs(endpoint.headers, separator=": "),
            "secret_headers": format_pairs(
                {name: crypto.mask(value) for name, value in secrets.items()}, separator=": "),
            "mapper_documents": mapper.get("documents", ""), "mapper_id": mapper.get("id", ""),
            "mapper_name": mapper.get("name", ""), "mapper_image": mapper.get("image") or "",
            "mapper_fields": format_pairs(mapper.get("fields") or {}, separator=": "),
        }

    def clean_headers(self) -> dict[str, str]:
        return parse_pairs(self.cleaned_data["headers"], separator=":", field="Name")

    def clean_secret_headers(self) -> dict[str, str]:
        return parse_pairs(self.cleaned_data["secret_headers"], separator=":", field="Name")

    def clean_mapper_fields(self) -> dict[str, str]:
        return parse_pairs(self.cleaned_data["mapper_fields"], separator=":", field="Label")

    def clean(self) -> dict[str, Any]:
        """Check the URL and every mapper expression here, so one answer names each bad
        field, even when another field (headers, say) did not parse."""
        data = super().clean()
        if data.get("preset") == "demo" and not data.get("url") and self.demo_url:
            data["url"] = self.demo_url
        if "url" in data:
            if not data["url"]:
                self.add_error("url", "This field is required.")
            elif http_url_problem(data["url"]):
                self.add_error("url", http_url_problem(data["url"]))
        mapper = {"documents": data.get("mapper_documents", ""), "id": data.get("mapper_id", ""),
                  "name": data.get("mapper_name", ""), "image": data.get("mapper_image") or None,
                  "fields": data.get("mapper_fields", {})}
        if data.get("preset"):
            preset = preset_mapper(data["preset"])
            mapper = {key: value or preset[key] for key, value in mapper.items()}
        for key, problem in mapper_problems(mapper).items():
            field_name = "_".join(key.split(".")[:2])  # mapper.fields.Price -> mapper_fields
            if field_name not in self.fields or field_name not in data:
                continue  # unparsed: that field already has its error
            if problem == "is required":
                problem = "This field is required (or choose a mapper preset)."
            if key.startswith("mapper.fields."):
                problem = f"{key.split('.', 2)[2]}: {problem}"
            self.add_error(field_name, problem)
        data["mapper"] = mapper
        return data

    def service_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"name": data.get("name", ""), "url": data["url"], "method": data["method"],
                "timeout_seconds": data["timeout_seconds"], "headers": data["headers"],
                "secret_headers": data["secret_headers"], "mapper": data["mapper"],
                "max_concurrent_requests": data.get("max_concurrent_requests"),
                "requests_per_minute": data.get("requests_per_minute"),
                "allow_cross_origin_redirects": data.get("allow_cross_origin_redirects", False)}


class EndpointTestForm(forms.Form):
    """The Test button's inputs beside the endpoint form; none of it is stored."""

    use_required_attribute = False  # the same <form> also saves, without a test query
    query = forms.CharField(label="Test query", max_length=500, required=False,
                            widget=forms.TextInput(attrs={"placeholder": "e.g. running shoes"}))
    params = forms.CharField(
        label="Test parameters", required=False, initial="q=#query#",
        widget=forms.Textarea(attrs={**MONO, "rows": 2}),
        help_text="One 'name=value' per line, as a search model would send them.")

    def clean_params(self) -> dict[str, str]:
        return parse_pairs(self.cleaned_data["params"], separator="=", field="name")


class SearchModelForm(forms.Form):
    name = forms.CharField(max_length=100)
    endpoint = forms.ModelChoiceField(queryset=Endpoint.objects.none())
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    params = forms.CharField(
        label="Query parameters", required=False, widget=forms.Textarea(attrs=MONO),
        help_text="One 'name=value' per line; #query# is replaced by the keyword.")
    body_format = forms.ChoiceField(choices=SearchModel.BodyFormat.choices,
                                    label="Body format")
    body = forms.CharField(
        required=False, widget=forms.Textarea(attrs={**MONO, "rows": 6}),
        help_text='For POST/PUT endpoints, e.g. {"query": {"match": {"title": "#query#"}}}.')
    headers = forms.CharField(
        required=False, widget=forms.Textarea(attrs=MONO),
        help_text="One 'Name: value' per line, added to the endpoint's. Sensitive ones "
                  "(Authorization, API keys, tokens, cookies) are encrypted and shown masked; "
                  "keep a masked value to keep the secret.")
    default_keywords = forms.CharField(required=False, widget=forms.Textarea(attrs=MONO),
                                       help_text="Offered when creating an evaluation.")

    def __init__(self, *args, team: Team, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["endpoint"].queryset = Endpoint.objects.filter(team=team, archived_at=None)

    @staticmethod
    def initial_for(model: SearchModel, headers: dict[str, str]) -> dict[str, Any]:
        """`headers`: the model's, secret ones masked (services.search_model_headers_shown)."""
        return {"name": model.name, "endpoint": model.endpoint_id,
                "description": model.description, "body_format": model.body_format,
                "params": format_pairs(model.params, separator="="), "body": model.body or "",
                "headers": format_pairs(headers, separator=": "),
                "default_keywords": model.default_keywords}

    def clean_params(self) -> dict[str, str]:
        return parse_pairs(self.cleaned_data["params"], separator="=", field="name")

    def clean_headers(self) -> dict[str, str]:
        return parse_pairs(self.cleaned_data["headers"], separator=":", field="Name")

    def service_kwargs(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        data["body"] = data["body"] or None
        return data


class ModelTestForm(forms.Form):
    query = forms.CharField(max_length=500, widget=forms.TextInput(
        attrs={"placeholder": "a keyword to try", "autofocus": True}))
