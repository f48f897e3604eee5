"""Forms of the query set pages: shape only; rules are the services'."""

from typing import Any

from django import forms

from evaluations.forms import KEYWORDS_HELP, MONO
from evaluations.services.keywords import keyword_upload_size_problem


class QuerySetForm(forms.Form):
    """Create a query set, or edit one (a changed list becomes a new version)."""

    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    keywords = forms.CharField(
        # Not stripped: blank lines before the first keyword keep error line numbers right.
        required=False, strip=False, widget=forms.Textarea(attrs={**MONO, "rows": 10}),
        help_text=KEYWORDS_HELP)
    keywords_file = forms.FileField(
        required=False, label="…or upload keywords (CSV or TXT)",
        help_text="TXT: one per line. CSV: the first column. Added after the typed ones.")

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
