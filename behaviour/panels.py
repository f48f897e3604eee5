"""The "What users did" panel: a set of keywords' online metrics over a chosen source and
window, for the pages that show offline metrics (an evaluation's dashboard, a query set's
page, a keyword's page). Each page passes its keywords and the team; this module reads the
window picker's query string, picks the source and returns the panel's context, rendered
by templates/behaviour/_online_panel.html.

The query string: `online_source` (a source of the team; default its newest),
`online_window` (`7`, `30`: the last days of the source's data; `all`, the default: its
whole window; `days`: from `online_from` to `online_to`) and `online_k` (CTR@k's cut-off).
A value the form refuses is named in the panel, which then shows the defaults: the rest of
the page is unaffected. The page's segment (a tag its keywords carry, as the dashboard's
segment selector chose and checked it) narrows the panel to that tag's keywords.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from django import forms
from django.db.models import QuerySet
from django.http import QueryDict
from django.utils.http import urlencode

from behaviour.models import BehaviourSource, last_day_of
from behaviour.summary import OnlineSummary, online_summary
from metrics.queries import Tagged

WINDOWS = {"all": "Whole log", "7": "Last 7 days", "30": "Last 30 days", "days": "Dates"}
K_CHOICES = (1, 3, 5, 10)
PARAMS = ("online_source", "online_window", "online_from", "online_to", "online_k")


class WindowForm(forms.Form):
    online_source = forms.IntegerField(required=False, min_value=1)
    online_window = forms.ChoiceField(required=False, choices=list(WINDOWS.items()))
    online_from = forms.DateField(required=False)
    online_to = forms.DateField(required=False)
    online_k = forms.TypedChoiceField(required=False, coerce=int, empty_value=10,
                                      choices=[(k, k) for k in K_CHOICES])

    def clean(self) -> dict:
        data = super().clean()
        start, end = data.get("online_from"), data.get("online_to")
        if data.get("online_window") == "days" and start and end and start > end:
            self.add_error("online_to", "The window ends before it starts.")
        return data


@dataclass
class OnlinePanel:
    sources: list[BehaviourSource]
    source: BehaviourSource | None
    window: str
    start_on: date | None
    end_on: date | None
    k: int
    summary: OnlineSummary | None
    errors: list[str] = field(default_factory=list)
    kept_params: list[tuple[str, str]] = field(default_factory=list)
    """The page's other query-string parameters, kept by the picker's form."""
    evaluation_id: int | None = None
    """The evaluation whose exports (JSON, CSV per keyword) the panel links to."""
    segment: str = ""
    """The tag whose keywords the figures are of; "": every keyword of the page."""

    @property
    def export_query(self) -> str:
        """The window and segment as the exports' query string."""
        return urlencode({name: value for name, value in (
            ("start_on", self.start_on and self.start_on.isoformat()),
            ("end_on", self.end_on and self.end_on.isoformat()), ("k", self.k),
            ("segment", self.segment)) if value})

    @property
    def windows(self) -> list[tuple[str, str]]:
        return list(WINDOWS.items())

    @property
    def k_choices(self) -> tuple[int, ...]:
        return K_CHOICES


def _window(source: BehaviourSource, window: str, start: date | None, end: date | None
            ) -> tuple[date | None, date | None]:
    """The days of a window; the presets count back from the source's last day of data
    (an imported log is rarely today's)."""
    if window == "days":
        return start, end
    if window in ("7", "30") and source.window_end_at is not None:
        last = last_day_of(source.window_end_at)
        return last - timedelta(days=int(window) - 1), last
    return None, None


def online_panel(*, query: QueryDict, team_id: int, keyword_texts: QuerySet,
                 evaluation_id: int | None = None, segment: str = "") -> OnlinePanel:
    """The panel of the keywords whose normalised texts `keyword_texts` yields (a
    values("normalized_text") queryset of Keyword), those tagged `segment` when one is
    given (the page has checked that some carry it), from one of the team's sources: one
    query for the sources and one or two for the figures (behaviour.summary), whatever
    the number of keywords."""
    form = WindowForm(query)
    valid = form.is_valid()
    data = form.cleaned_data if valid else {}
    errors = [f"{name.removeprefix('online_')}: {message}"
              for name, messages in form.errors.items() for message in messages]
    sources = list(BehaviourSource.objects.filter(team_id=team_id).only(
        "id", "name", "kind", "window_start_at", "window_end_at", "team_id"))
    wanted = data.get("online_source")
    source = next((s for s in sources if s.pk == wanted), None) if wanted else None
    if wanted and source is None:
        errors.append("source: not a behaviour source of this team; the newest is shown.")
    source = source or (sources[0] if sources else None)
    window = data.get("online_window") or "all"
    k = data.get("online_k") or 10
    kept = [(name, value) for name, values in query.lists() if name not in PARAMS
            for value in values]
    if source is None:
        return OnlinePanel(sources, None, window, None, None, k, None, errors, kept,
                           evaluation_id, segment)
    if segment:
        keyword_texts = keyword_texts.filter(Tagged(segment))
    start_on, end_on = _window(source, window, data.get("online_from"), data.get("online_to"))
    summary = online_summary(source=source, keyword_texts=keyword_texts, k=k,
                             start_on=start_on, end_on=end_on)
    return OnlinePanel(sources, source, window, start_on, end_on, k, summary, errors, kept,
                       evaluation_id, segment)
