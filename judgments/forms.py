"""Shapes of the judgments forms; the rules across rows stay in services."""

import re
from typing import Any

from django import forms
from django.utils.safestring import mark_safe

from judgments.formats.recognise import KINDS
from judgments.imports import DUPLICATE_POLICIES
from judgments.scales import Grade, GradeScale

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


def _grade_text(grade: Grade) -> str:
    # The detail scale's grades are labelled with their own number: "7", not "7 7".
    return str(grade.value) if grade.label == str(grade.value) else f"{grade.value} {grade.label}"


class TransformerForm(forms.Form):
    """A transformer as one row per grade of the source scale: `grade_<g>` picks the target
    grade of source grade g. The rows are those of the source the page was built for (the
    posted one on a POST), so every grade of it must be mapped."""

    source = forms.ChoiceField()
    target = forms.ChoiceField()

    def __init__(self, *args, scales: list[GradeScale], source: str, target: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.scales = {scale.code: scale for scale in scales}
        choices = [(scale.code, scale.describe()) for scale in scales]
        self.fields["source"].choices = choices
        self.fields["target"].choices = choices
        source_scale = self.scales.get(source)
        target_scale = self.scales.get(target)
        self.grade_field_names: list[str] = []
        for grade in source_scale.grades if source_scale else ():
            name = f"grade_{grade.value}"
            self.fields[name] = forms.ChoiceField(
                label=_grade_text(grade),
                choices=[("", "—")] + [(str(g.value), _grade_text(g))
                                       for g in (target_scale.grades if target_scale else ())],
                error_messages={
                    "required": f"Grade {grade.value} is not mapped.",
                    "invalid_choice": "%(value)s is not a grade of "
                                      f"{target_scale.describe() if target_scale else target}.",
                },
            )
            self.grade_field_names.append(name)

    @property
    def grade_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.grade_field_names]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        source, target = cleaned.get("source"), cleaned.get("target")
        if source and target and source == target:
            self.add_error("target", "Choose a scale other than the source.")
        cleaned["mapping"] = {
            name.removeprefix("grade_"): int(cleaned[name])
            for name in self.grade_field_names if cleaned.get(name)
        }
        return cleaned

    @staticmethod
    def initial_for(mapping: dict[Any, int] | None) -> dict[str, str]:
        """The rows' initial values from a stored or default mapping."""
        return {f"grade_{int(k)}": str(v) for k, v in (mapping or {}).items()}


class GraderTagsForm(forms.Form):
    tags = forms.CharField(required=False, max_length=500,
                           help_text="Comma-separated, e.g. de, fashion.")

    def clean_tags(self) -> list[str]:
        return [tag for tag in self.cleaned_data["tags"].split(",") if tag.strip()]


class PoolImportForm(forms.Form):
    """Judgments for the team's pool in one of the formats of judgments.formats.recognise
    (recognised, or chosen). The file may be left out when a previewed one is `kept`."""

    scale = forms.ChoiceField(help_text="The scale the grades are on.")
    format = forms.ChoiceField(choices=list(KINDS.items()), initial="auto")
    file = forms.FileField(required=False)
    mapping = forms.FileField(
        required=False, help_text="TREC only, when the topic ids are numbers: qid<TAB>keyword "
                                  "lines.")
    duplicates = forms.ChoiceField(
        label="A keyword and document on several lines", widget=forms.RadioSelect,
        choices=list(DUPLICATE_POLICIES.items()), initial="all", required=False)

    def __init__(self, *args, scale_choices: list[tuple[str, str]], kept: bool = False,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scale"].choices = scale_choices
        self.kept = kept
        if kept:
            self.fields["file"].help_text = ("The previewed file is kept: choose another "
                                             "only to replace it.")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        # Left out (a script posting the earlier form): every line a grade, as before.
        data["duplicates"] = data.get("duplicates") or "all"
        if not data.get("file") and not self.kept and "file" not in self.errors:
            self.add_error("file", "Choose a file.")
        return data
