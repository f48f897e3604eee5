"""Query-string forms of the dashboard pages: they check shape; selectors do the rest."""

from django import forms

from evaluations.models import EvaluationMetric
from evaluations.services.keywords import MAX_TAG_LENGTH
from metrics.reports.keyword_table import FILTERS
from searchtweak.integers import ID_MAX, bounded, form_integer


def weighted_field() -> forms.TypedChoiceField:
    """`weighted=1`: means weighted by the keywords' traffic; absent, empty or 0: plain."""
    return forms.TypedChoiceField(
        choices=[("", "Every keyword alike"), ("0", "Every keyword alike"),
                 ("1", "Weighted by traffic")],
        coerce=lambda value: value == "1", empty_value=False, required=False)


class SegmentForm(forms.Form):
    """The keywords a page counts: a segment's tag (empty: every keyword) and whether the
    means are weighted by traffic (metrics.reports.segments)."""

    segment = forms.CharField(required=False, max_length=MAX_TAG_LENGTH)
    weighted = weighted_field()

    def clean_segment(self) -> str:
        # Tags are stored lower-cased (evaluations.services.keywords).
        return self.cleaned_data["segment"].lower()


class KeywordTableForm(SegmentForm):
    """Sorting, filtering, search and paging of the per-keyword table, the metric the
    distribution chart shows, and the segment every part of the page counts (which tags
    exist is the view's to check)."""

    sort = forms.ChoiceField(required=False)
    dir = forms.ChoiceField(choices=[("asc", "ascending"), ("desc", "descending")],
                            required=False)
    show = forms.ChoiceField(choices=list(FILTERS.items()), required=False)
    q = forms.CharField(required=False, max_length=500, label="Search")
    page = form_integer(required=False, min_value=1)
    # Keyset cursors: the page starts after (Next) or ends before (Previous) this keyword.
    after = form_integer(required=False, min_value=1, max_value=ID_MAX)
    before = form_integer(required=False, min_value=1, max_value=ID_MAX)
    dist = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)
    against = forms.ChoiceField(choices=[("", "Baseline, else previous"),
                                         ("baseline", "Team baseline"),
                                         ("previous", "Previous evaluation of the model")],
                                required=False)

    def __init__(self, *args, configs: list[EvaluationMetric], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["sort"].choices = [("", "Position"), ("position", "Position"),
                                       ("text", "Keyword")] + [
            (f"m{config.pk}", str(config)) for config in configs]
        self.fields["dist"].choices = [("", "First metric")] + [
            (str(config.pk), str(config)) for config in configs]


class CompareForm(SegmentForm):
    a = form_integer(min_value=1, max_value=ID_MAX, label="Evaluation A (before)")
    b = form_integer(min_value=1, max_value=ID_MAX, label="Evaluation B (after)")
    metric = form_integer(required=False, min_value=0,
                                help_text="Sort keywords by the change of this shared metric "
                                          "(empty: the largest change of any).")
    page = form_integer(required=False, min_value=1)

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("a") is not None and cleaned.get("a") == cleaned.get("b"):
            self.add_error("b", "Pick two different evaluations.")
        return cleaned


class CompareKeywordForm(forms.Form):
    a = form_integer(min_value=1, max_value=ID_MAX)
    b = form_integer(min_value=1, max_value=ID_MAX)
    keyword = forms.CharField(max_length=500)


class BaselineForm(forms.Form):
    action = forms.ChoiceField(choices=[("set", "Set"), ("clear", "Clear")])


class LeaderboardForm(forms.Form):
    metric = forms.CharField(required=False, max_length=200)


class IntegerListField(forms.Field):
    """A repeated query parameter of whole numbers (?evaluation=1&evaluation=2)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value) -> list[int]:
        if not value:
            return []
        try:
            return [bounded(item, field="evaluation", min_value=1, max_value=ID_MAX)
                    for item in value]
        except forms.ValidationError:
            raise forms.ValidationError("Evaluation ids are whole numbers.") from None


class CompareManyForm(SegmentForm):
    """The N-way compare's query string; how many evaluations, which reference and the
    rest of the rules are the selector's (metrics.reports.compare_many)."""

    evaluation = IntegerListField(required=False)
    reference = form_integer(required=False, min_value=1, max_value=ID_MAX)
    mode = forms.ChoiceField(choices=[("reference", "Against the reference"),
                                      ("tukey", "All pairs (Tukey HSD)")], required=False)
    sort = forms.RegexField(regex=r"^(change|text|m\d{1,3})$", required=False)
    dir = forms.ChoiceField(choices=[("asc", "ascending"), ("desc", "descending")],
                            required=False)
    show = forms.ChoiceField(choices=[("", "All"), ("changed", "Changed only")],
                             required=False)
    page = form_integer(required=False, min_value=1)
