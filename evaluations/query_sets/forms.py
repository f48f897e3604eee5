"""Forms of the query set pages: shape only; rules are the services'."""

from typing import Any

from django import forms

from evaluations.forms import KEYWORDS_HELP, MONO
from evaluations.query_sets.file_formats import KINDS
from evaluations.services.keyword_input import keyword_upload_size_problem
from searchtweak.integers import form_integer

TRAFFIC_FIELDS = ("traffic_segments", "traffic_head_cut", "traffic_torso_cut")


class QuerySetForm(forms.Form):
    """Create a query set, or edit one (a changed list becomes a new version)."""

    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    keywords = forms.CharField(
        # Not stripped: blank lines before the first keyword keep error line numbers right.
        required=False, strip=False, widget=forms.Textarea(attrs={**MONO, "rows": 10}),
        help_text=KEYWORDS_HELP)
    keywords_file = forms.FileField(
        required=False, label="…or upload keywords",
        help_text="Plain text (one keyword a line), CSV keyword,weight,tags with a header, "
                  "Quepid's basic CSV export (its queries) or an OpenSearch Workbench query "
                  "set (NDJSON queryText lines). The page says what the file was read as. "
                  "Added after the typed ones.")
    keywords_format = forms.ChoiceField(
        required=False, choices=list(KINDS.items()), initial="auto", label="File format",
        help_text="Recognised from the file unless you choose one.")
    traffic_segments = forms.BooleanField(
        required=False, label="Tag head, torso and tail by traffic",
        help_text="Sorted by weight, the keywords that make the first share of all traffic "
                  "are tagged head, the next share torso, the rest tail; recomputed with "
                  "every version.")
    # Not sent (a script's post): the set's cut is kept, a new set's is the default.
    traffic_head_cut = form_integer(
        required=False, max_value=100, initial=50,
        label="Head: the top queries making this % of traffic")
    traffic_torso_cut = form_integer(
        required=False, max_value=100, initial=80,
        label="Torso: up to this % of traffic (the rest is tail)")

    def traffic(self) -> dict[str, Any]:
        """The traffic segment fields given, for the services."""
        return {name: self.cleaned_data[name] for name in TRAFFIC_FIELDS
                if self.cleaned_data.get(name) is not None}

    def clean_keywords_file(self) -> Any:
        upload = self.cleaned_data.get("keywords_file")
        problem = upload and keyword_upload_size_problem(filename=upload.name, size=upload.size)
        if problem:
            raise forms.ValidationError(problem)
        return upload


class SaveAsQuerySetForm(forms.Form):
    """An evaluation's keywords saved as a new query set."""

    name = forms.CharField(max_length=200, label="Query set name")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
