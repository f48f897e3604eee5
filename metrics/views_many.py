"""The N-way compare page and its CSV: 2 to 10 evaluations side by side.

Thin views: the evaluations through their access function (one query for all of them),
the query-string form, the selector of metrics.reports.compare_many; its rules come back as
ValidationError naming the field, shown on the page with a 400.
"""

from html import escape

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from audit.models import Action
from audit.services import audit_record
from evaluations.models import EvaluationMetric, Keyword
from evaluations.selectors import evaluations_get_for_user
from metrics.forms import CompareManyForm
from metrics.reports import compare_many
from metrics.reports.compare_many import KeywordRow, ManyComparison
from metrics.reports.comparisons import team_evaluations_for_picker
from metrics.reports.segments import (
    SegmentChoice,
    SegmentMeans,
    segment_means_of,
    segment_problem,
)
from metrics.views import query_with
from searchtweak import access
from searchtweak.csv_cells import csv_text

KEYWORDS_PER_PAGE = 50
TEMPLATE = "metrics/compare_many.html"


def _picker(request: HttpRequest) -> dict:
    membership = access.current_membership(user=request.user)
    team_ids = [membership.team_id] if membership else []
    return {"picker": list(team_evaluations_for_picker(team_ids=team_ids))}


def _comparison(request: HttpRequest, form: CompareManyForm) -> ManyComparison:
    """The comparison the valid form asks for; 404 when any evaluation is not the user's,
    ValidationError (naming the field) when the selector refuses the set."""
    data = form.cleaned_data
    ids = data["evaluation"]
    if len(ids) > compare_many.MAX_EVALUATIONS * 2:  # no access query for a flood of ids
        raise ValidationError({"evaluations": f"Pick {compare_many.MIN_EVALUATIONS} to "
                                              f"{compare_many.MAX_EVALUATIONS} evaluations."})
    evaluations = evaluations_get_for_user(user=request.user, evaluation_ids=ids,
                                           minimum_role=access.READS_ROLE)
    reference_id = data.get("reference") or (ids[0] if ids else None)
    reference = next((e for e in evaluations if e.pk == reference_id), None)
    sort = data.get("sort") or "change"
    choice = SegmentChoice(data["segment"], data["weighted"])
    problem = segment_problem(
        means=SegmentMeans({}, []), segment=choice.segment,
        keywords=Keyword.objects.filter(evaluation__in=evaluations),
        owner="the evaluations compared") if choice.segment else None
    if problem:
        raise ValidationError({"segment": problem})
    return compare_many.evaluations_compare_many(
        evaluations=evaluations, reference=reference, mode=data.get("mode") or "reference",
        sort=sort, descending=(data.get("dir") or ("asc" if sort == "text" else "desc"))
        == "desc", show=data.get("show") or "", choice=choice)


def _add_errors(form: CompareManyForm, error: ValidationError) -> None:
    for name, messages in error.message_dict.items():
        form.add_error(None, f"{name}: {' '.join(messages)}")


@require_GET
@login_required
def compare_many_page(request: HttpRequest) -> HttpResponse:
    context: dict = {"form": CompareManyForm(), **_picker(request),
                     "max_evaluations": compare_many.MAX_EVALUATIONS}
    if "evaluation" not in request.GET:
        return render(request, TEMPLATE, context)
    form = CompareManyForm(request.GET)
    # The picks stay ticked when the set is refused, so one click fixes it.
    context.update(form=form, chosen_ids={int(pk) for pk in request.GET.getlist("evaluation")
                                          if pk.isdigit()})
    if not form.is_valid():
        return render(request, TEMPLATE, context, status=400)
    try:
        comparison = _comparison(request, form)
    except ValidationError as error:
        _add_errors(form, error)
        return render(request, TEMPLATE, context, status=400)
    page = Paginator(comparison.keywords, KEYWORDS_PER_PAGE).get_page(
        form.cleaned_data.get("page"))
    compare_many.keyword_overlaps(comparison=comparison, rows=page.object_list)
    query = request.GET.copy()
    return render(request, TEMPLATE, {
        **context, "comparison": comparison, "keywords": page,
        "segment_tags": segment_means_of(list(EvaluationMetric.objects.filter(
            evaluation__in=comparison.evaluations).order_by("evaluation_id", "position",
                                                             "id"))).tags,
        "rows": [(row, _cells_html(row)) for row in page.object_list],
        "chosen_ids": {e.pk for e in comparison.evaluations},
        "sort_links": (links := _sort_links(query, comparison)),
        "metric_columns": [(metric, links[f"m{i}"])
                           for i, metric in enumerate(comparison.metrics)],
        "show_links": [(key, name, query_with(query, show=key, page=""), comparison.show == key)
                       for key, name in (("", "All"), ("changed", "Changed only"))],
        "page_query": query_with(query, page=""),
        "csv_query": query_with(query, page=""),
    })


def _number(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.3f}" if signed and value else f"{value:.3f}"


def _cells_html(row: KeywordRow) -> str:
    """A keyword row's value and churn cells as one piece of markup: a page holds 50 rows
    of up to 10 evaluations times the metrics, too many cells for template tags (or
    format_html) to build within the page's time budget. The numbers are formatted floats;
    the document ids, the only text, are escaped here."""
    parts = []
    for cells in row.cells:
        for value, delta in cells:
            if delta is None:
                parts.append(f'<td class="num">{_number(value)}</td>')
            else:
                css = "delta up" if delta > 0 else "delta down" if delta < 0 else ""
                parts.append(f'<td class="num">{_number(value)} <span class="{css}">'
                             f'({_number(delta, signed=True)})</span></td>')
    for overlap in row.overlaps or []:
        if overlap is None:
            continue
        moved = [*(f"+{doc}" for doc in overlap.entered),
                 *(f"\u2212{doc}" for doc in overlap.left)]
        parts.append(f'<td class="num">{_number(overlap.rbo)} · {_number(overlap.jaccard)}'
                     f'</td><td class="mono">{escape(" ".join(moved) or "same documents")}'
                     "</td>")
    return mark_safe("".join(parts))  # numbers, and the ids escaped above


def _sort_links(query, comparison: ManyComparison) -> dict[str, dict]:
    def link(key: str) -> dict:
        active = comparison.sort == key
        descending = not comparison.descending if active else key != "text"
        return {"query": query_with(query, sort=key, dir="desc" if descending else "asc",
                                page=""),
                "active": active, "descending": comparison.descending if active else None}

    keys = ["change", "text", *(f"m{i}" for i in range(len(comparison.metrics)))]
    return {key: link(key) for key in keys}


@require_GET
@login_required
def compare_many_csv(request: HttpRequest) -> HttpResponse:
    """The per-keyword table of the page (its sort and filter, every page) as CSV."""
    form = CompareManyForm(request.GET)
    if not form.is_valid():
        return HttpResponse("; ".join(f"{name}: {' '.join(errors)}"
                                      for name, errors in form.errors.items()),
                            status=400, content_type="text/plain; charset=utf-8")
    try:
        comparison = _comparison(request, form)
    except ValidationError as error:
        return HttpResponse("; ".join(f"{name}: {' '.join(messages)}"
                                      for name, messages in error.message_dict.items()),
                            status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(csv_text(compare_many.compare_many_csv_rows(comparison)),
                            content_type="text/csv; charset=utf-8")
    ids = "-".join(str(e.pk) for e in comparison.evaluations)
    first = comparison.evaluations[0]
    audit_record(action=Action.EXPORT_DOWNLOADED, actor=request.user, team_id=first.team_id,
                 object_type="evaluation", object_id=first.pk,
                 after={"format": "compare_csv",
                        "evaluations": [e.pk for e in comparison.evaluations]})
    response["Content-Disposition"] = f'attachment; filename="compare-{ids}.csv"'
    return response
