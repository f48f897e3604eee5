"""A team's audit trail, for its owners: the page and its CSV."""

import json
from collections.abc import Iterable, Iterator

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from audit.models import Action
from audit.selectors import team_events
from audit.services import audit_record
from searchtweak.csv_cells import csv_lines
from searchtweak.forms import AuditFilterForm
from searchtweak.models import Role
from searchtweak.selectors import team_get_for_user

PAGE_ROWS = 200
CSV_HEADER = ["at", "actor", "action", "object_type", "object_id", "client_address",
              "changes"]


@require_GET
@login_required
def team_audit(request: HttpRequest, team_id: int) -> HttpResponse:
    """The newest PAGE_ROWS events matching the filters; `?format=csv` downloads them all."""
    team = team_get_for_user(user=request.user, team_id=team_id, minimum_role=Role.OWNER)
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return render(request, "searchtweak/team_audit.html",
                      {"team": team, "form": form, "events": []}, status=400)
    events = team_events(team_id=team.pk, **form.cleaned_data)
    if request.GET.get("format") == "csv":
        audit_record(action=Action.EXPORT_DOWNLOADED, actor=request.user, team_id=team.pk,
                     object_type="audit_trail", object_id=team.pk,
                     after={"format": "csv", **{key: str(value) for key, value
                                                in form.cleaned_data.items() if value}})
        rows = ([event.at.isoformat(), event.actor_label, event.action, event.object_type,
                 event.object_id, event.client_address or "",
                 json.dumps(event.changes, sort_keys=True)]
                for event in events.iterator(chunk_size=2000))
        response = StreamingHttpResponse(csv_lines(_with_header(rows)),
                                         content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="audit-team-{team.pk}.csv"'
        return response
    return render(request, "searchtweak/team_audit.html", {
        "team": team, "form": form, "events": list(events[:PAGE_ROWS]),
        "page_rows": PAGE_ROWS})


def _with_header(rows: Iterable[list]) -> Iterator[list]:
    yield CSV_HEADER
    yield from rows
