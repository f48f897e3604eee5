"""A judge's call log: every HTTP attempt it made (runs and Test), filtered and paged, one
call in full (its redacted request, the answer, the error), and the log as JSON Lines."""

import json

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from audit.models import Action
from audit.services import audit_record
from judges import access as judge_access
from judges import call_export, run_selectors
from judges.forms_runs import CallFilterForm


@require_GET
@login_required
def judge_calls(request: HttpRequest, judge_id: int) -> HttpResponse:
    judge = judge_access.judge_get_for_user(user=request.user, judge_id=judge_id,
                                             minimum_role=run_selectors.RUNS_ROLE)
    form = CallFilterForm(request.GET or None, judge=judge)
    valid = form.is_bound and form.is_valid()
    if form.is_bound and not valid:
        calls = run_selectors.calls_of_judge(judge=judge).none()
    else:
        filters = form.filters() if valid else run_selectors.CallFilters()
        calls = run_selectors.calls_of_judge(judge=judge, filters=filters).select_related("run")
    page = Paginator(calls, run_selectors.CALLS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "judges/call_list.html", {
        "judge": judge, "form": form, "page": page, "query": query.urlencode(),
        "totals": run_selectors.token_totals_of_judge(judge=judge),
    }, status=400 if form.errors else 200)


@require_GET
@login_required
def call_detail(request: HttpRequest, call_id: int) -> HttpResponse:
    call = run_selectors.call_get_for_user(user=request.user, call_id=call_id)
    return render(request, "judges/call_detail.html", {
        "call": call, "judge": call.judge,
        "request_text": json.dumps(call.request, indent=2, ensure_ascii=False),
        "answer_text": _pretty_json(call.answer),
    })


def _pretty_json(text: str) -> str:
    """The answer indented when it is JSON, as received otherwise."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


@require_GET
@login_required
def judge_calls_export(request: HttpRequest, judge_id: int) -> HttpResponse:
    """The log's filtered calls, one JSON object a line, streamed."""
    judge = judge_access.judge_get_for_user(user=request.user, judge_id=judge_id,
                                             minimum_role=run_selectors.RUNS_ROLE)
    form = CallFilterForm(request.GET, judge=judge)
    if not form.is_valid():
        return HttpResponse(form.errors.as_json(), status=400, content_type="application/json")
    calls = run_selectors.calls_of_judge(judge=judge, filters=form.filters())
    audit_record(action=Action.EXPORT_DOWNLOADED, actor=request.user, team_id=judge.team_id,
                 object_type="judge_calls", object_id=judge.pk, after={"format": "jsonl"})
    response = StreamingHttpResponse(call_export.calls_jsonl(calls),
                                     content_type=call_export.JSONL_CONTENT_TYPE)
    response["Content-Disposition"] = (
        f'attachment; filename="{call_export.export_filename(judge.pk)}"')
    return response
