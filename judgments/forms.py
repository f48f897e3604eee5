"""Shapes of the judgments forms; the rules across rows stay in services."""

import re
from typing import Any

from django import forms
from django.utils.safestring import mark_safe

from judgments.scales import GradeScale

_INTEGER = re.compile(r"-?\d+")
_COLOR = re.compile(r"#[0-9a-fA-F]{6}")


def parse_grade(raw: str) -> Any:
    """The posted grade as an int when it is one; otherwise as sent, for the service to
    reject with a message that quotes it."""
    text = (raw or "").strip()
    return int(text) if _INTEGER.fullmatch(text) else text


class GradeForm(forms.Form):
    grade = forms.CharField(max_length=10)
    unsure = forms.BooleanField(required=False)
    note = forms.CharField(required=False, max_length=2000)


class LeadGradeForm(forms.Form):
    grade = forms.CharField(max_length=10)


class ScaleForm(forms.Form):
    code = forms.SlugField(max_length=50, help_text="Short name evaluations refer to, e.g. stars.")
    name = forms.CharField(max_length=100)
    lo = forms.IntegerField(label="Lowest grade", min_value=0, max_value=10)
    hi = forms.IntegerField(label="Highest grade", min_value=0, max_value=10)
    labels = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        # Safe: the example is markup written here, and the shared form template escapes.
        help_text=mark_safe("One line per grade: the grade, its label and a colour, e.g. "
                            "<code>1 Bad #d92d20</code>."),
    )

    def __init__(self, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if editing:
            self.fields["code"].disabled = True

    def clean_labels(self) -> dict[str, dict[str, str]]:
        labels: dict[str, dict[str, str]] = {}
        problems = []
        for number, line in enumerate(self.cleaned_data["labels"].splitlines(), start=1):
            parts = line.split()
            if not parts:
                continue
            if not _INTEGER.fullmatch(parts[0]):
                problems.append(f"Line {number}: start with the grade, e.g. '1 Bad #d92d20'.")
                continue
            color = parts[-1] if len(parts) > 1 and parts[-1].startswith("#") else ""
            if color and not _COLOR.fullmatch(color):
                problems.append(f"Line {number}: {color} is not a colour like #1a2b3c.")
                continue
            label = " ".join(parts[1:-1] if color else parts[1:]).strip()
            grade = str(int(parts[0]))
            if grade in labels:
                problems.append(f"Line {number}: grade {grade} appears twice.")
                continue
            labels[grade] = {"label": label or grade, "color": color or "#5b6675"}
        if problems:
            raise forms.ValidationError(problems)
        return labels

    @staticmethod
    def labels_text(labels: dict[str, dict[str, str]]) -> str:
        return "\n".join(
            f"{grade} {entry.get('label', grade)} {entry.get('color', '')}".strip()
            for grade, entry in sorted(labels.items(), key=lambda item: int(item[0]))
        )


class TransformerForm(forms.Form):
    source = forms.ChoiceField()
    target = forms.ChoiceField()
    mapping = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10}),
        help_text="One line per source grade: <code>source = target</code>, e.g. "
                  "<code>2 = 1</code>.",
    )

    def __init__(self, *args, scales: list[GradeScale], **kwargs):
        super().__init__(*args, **kwargs)
        self.scales = {scale.code: scale for scale in scales}
        choices = [(scale.code, scale.describe()) for scale in scales]
        self.fields["source"].choices = choices
        self.fields["target"].choices = choices

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        source = self.scales.get(cleaned.get("source", ""))
        target = self.scales.get(cleaned.get("target", ""))
        text = cleaned.get("mapping")
        if source is None or target is None or text is None:
            return cleaned
        if source.code == target.code:
            self.add_error("target", "Choose a scale other than the source.")
            return cleaned
        mapping: dict[str, int] = {}
        problems = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            left, sep, right = line.replace("->", "=").partition("=")
            left, right = left.strip(), right.strip()
            if not sep or not _INTEGER.fullmatch(left) or not _INTEGER.fullmatch(right):
                problems.append(f"Line {number}: write 'source = target', e.g. '2 = 1'.")
            elif not source.contains(int(left)):
                problems.append(f"Line {number}: {left} is not a grade of {source.describe()}.")
            elif not target.contains(int(right)):
                problems.append(f"Line {number}: {right} is not a grade of {target.describe()}.")
            elif str(int(left)) in mapping:
                problems.append(f"Line {number}: grade {int(left)} is mapped twice.")
            else:
                mapping[str(int(left))] = int(right)
        for grade in range(source.lo, source.hi + 1):
            if not problems and str(grade) not in mapping:
                problems.append(f"Grade {grade} is not mapped: add a line '{grade} = …'.")
        if problems:
            self.add_error("mapping", problems)
        cleaned["mapping"] = mapping
        return cleaned

    @staticmethod
    def mapping_text(mapping: dict[Any, int]) -> str:
        return "\n".join(f"{k} = {v}" for k, v in sorted(mapping.items(), key=lambda i: int(i[0])))


class GraderTagsForm(forms.Form):
    tags = forms.CharField(required=False, max_length=500,
                           help_text="Comma-separated, e.g. de, fashion.")

    def clean_tags(self) -> list[str]:
        return [tag for tag in self.cleaned_data["tags"].split(",") if tag.strip()]


class PoolImportForm(forms.Form):
    """Judgments for the team's pool: CSV `keyword,doc_id,grade` or TREC qrels + mapping."""

    scale = forms.ChoiceField(help_text="The scale the grades are on.")
    format = forms.ChoiceField(choices=[("csv", "CSV keyword,doc_id,grade"),
                                        ("trec", "TREC qrels (qid 0 docid grade)")])
    file = forms.FileField()
    mapping = forms.FileField(required=False, help_text="TREC only: qid<TAB>keyword lines.")

    def __init__(self, *args, scale_choices: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scale"].choices = scale_choices
