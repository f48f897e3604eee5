"""The page's form for an offline model and its run file (shape only; services read it)."""

from django import forms

from evaluations.models import OfflineRun


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
