"""The page's form for an offline model and its run file (shape only; services read it)."""

from typing import Any

from django import forms

from evaluations.models import OfflineRun
from evaluations.offline_runs.services import run_upload_size_problem


class OfflineRunForm(forms.Form):
    name = forms.CharField(max_length=100)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    format = forms.ChoiceField(choices=OfflineRun.Format.choices, label="Format")
    file = forms.FileField(label="Run file", help_text=(
        "TREC run: 'qid Q0 docid rank score tag' lines. JSON Lines: one "
        '{"keyword": …, "results": [{"doc_id": …, "name": …}]} a line.'))
    topics = forms.FileField(label="Topic mapping", required=False, help_text=(
        "TREC only: 'qid<TAB>keyword' lines. Without it, each topic id is the keyword."))

    def __init__(self, *args, with_name: bool = True, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if not with_name:
            # Replacing a model's run: the model is already named.
            del self.fields["name"], self.fields["description"]

    def _size_checked(self, name: str) -> Any:
        # Checked before a byte is parsed: the size is known from the request.
        upload = self.cleaned_data.get(name)
        problem = upload and run_upload_size_problem(filename=upload.name, size=upload.size)
        if problem:
            raise forms.ValidationError(problem)
        return upload

    def clean_file(self) -> Any:
        return self._size_checked("file")

    def clean_topics(self) -> Any:
        return self._size_checked("topics")
