"""Two evaluations side by side: the comparison page, one keyword's results in both, and
the comparison a share link shows (sharing.views), rendered by the same function.

Thin views, as metrics.views: access function, form, the reads of metrics.reports.
"""

from urllib.parse import quote

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from evaluations.models import Evaluation, Keyword
from evaluations.selectors import evaluation_get_for_user
from metrics.forms import CompareForm, CompareKeywordForm
from metrics.reports import comparisons
from metrics.reports.segments import SegmentChoice, segment_means_of, segment_problem
from metrics.selectors import metric_configs
from searchtweak import access
from searchtweak.models import Role


def _picker_context(request: HttpRequest) -> dict:
    membership = access.current_membership(user=request.user)
    team_ids = [membership.team_id] if membership else []
    return {"evaluations": comparisons.team_evaluations_for_picker(team_ids=team_ids)}


@require_GET
@login_required
def compare(request: HttpRequest) -> HttpResponse:
    if not request.GET:
        return render(request, "metrics/compare.html",
                      {"form": CompareForm(), **_picker_context(request)})
    form = CompareForm(request.GET)
    if not form.is_valid():
        return render(request, "metrics/compare.html",
                      {"form": form, **_picker_context(request)}, status=400)
    a = evaluation_get_for_user(user=request.user, evaluation_id=form.cleaned_data["a"],
                                minimum_role=access.READS_ROLE)
    b = evaluation_get_for_user(user=request.user, evaluation_id=form.cleaned_data["b"],
                                minimum_role=access.READS_ROLE)
    return comparison_response(request, form, a, b, extra={
        **_picker_context(request),
        "can_lead": access.current_team_can(user=request.user, team_id=b.team_id,
                                            minimum_role=Role.LEAD)})


def comparison_response(request: HttpRequest, form: CompareForm, a: Evaluation,
                        b: Evaluation, *, extra: dict) -> HttpResponse:
    """The comparison of B against A (both already readable by the caller) that the valid
    `form` asks for, rendered with `extra`. It names no person and no grade."""
    # The segments are B's (the run's tags): what its stored segment means cover.
    means = segment_means_of(metric_configs(b.pk))
    choice = SegmentChoice(form.cleaned_data["segment"], form.cleaned_data["weighted"])
    problem = segment_problem(means=means, segment=choice.segment,
                              keywords=Keyword.objects.filter(evaluation=b),
                              owner=f"B ({b.name})") if choice.segment else None
    if problem:
        form.add_error("segment", f"{problem} Every keyword is shown.")
        choice = SegmentChoice(weighted=choice.weighted)
    comparison = comparisons.evaluation_comparison(
        a=a, b=b, sort_index=form.cleaned_data.get("metric"), choice=choice)
    keywords = Paginator(comparison.keywords, 50).get_page(form.cleaned_data.get("page"))
    return render(request, "metrics/compare.html", {
        "form": form, "comparison": comparison, "keywords": keywords,
        "sort_index": comparison.sort_index, "segment_tags": means.tags, "choice": choice,
        # Percent-encoded, so nothing in it needs HTML escaping.
        "segment_query": mark_safe("".join(f"&{name}={quote(value)}" for name, value
                                           in choice.query.items() if value)),
        **extra,
    }, status=400 if problem else 200)


@require_GET
@login_required
def compare_keyword(request: HttpRequest) -> HttpResponse:
    form = CompareKeywordForm(request.GET)
    if not form.is_valid():
        return render(request, "metrics/compare_keyword.html", {"form": form}, status=400)
    a = evaluation_get_for_user(user=request.user, evaluation_id=form.cleaned_data["a"],
                                minimum_role=access.READS_ROLE)
    b = evaluation_get_for_user(user=request.user, evaluation_id=form.cleaned_data["b"],
                                minimum_role=access.READS_ROLE)
    text = Keyword.normalize(form.cleaned_data["keyword"])
    visibility = access.grade_visibility(user=request.user)
    keyword_a, keyword_b, rows = comparisons.keyword_side_by_side(
        a=a, b=b, normalized_text=text, visibility=visibility)
    return render(request, "metrics/compare_keyword.html", {
        "form": form, "a": a, "b": b, "keyword_a": keyword_a, "keyword_b": keyword_b,
        "sees_all_grades": all(visibility.sees_everyone(e.team_id) for e in (a, b)),
        "rows": rows, "text": (keyword_a or keyword_b).text if keyword_a or keyword_b else text,
    }, status=200 if keyword_a or keyword_b else 404)
