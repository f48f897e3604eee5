"""Dashboards, comparisons, history and leaderboards: what a team lead opens every morning.

Thin views: access function, form for the query string, the reads of metrics.reports
(dashboards, comparisons, leaderboards) and its charts. Every page renders fully without
JavaScript; the small script of the evaluation page only re-fetches its partials while
grades arrive.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from behaviour.panels import online_panel
from evaluations.models import Evaluation, EvaluationMetric, Keyword
from evaluations.selectors import evaluation_get_for_user, search_model_get_for_user
from judgments.gold_accuracy import DRIFT_WINDOW, GOLD_ACCURACY_THRESHOLD, GOLD_MIN_ANSWERS
from metrics import services
from metrics.forms import (
    BaselineForm,
    CompareForm,
    CompareKeywordForm,
    KeywordTableForm,
    LeaderboardForm,
    SegmentForm,
)
from metrics.reports import (
    charts,
    compare_many_stats,
    comparisons,
    leaderboards,
    metric_history,
    team_overview,
)
from metrics.reports.agreement import evaluation_agreement
from metrics.reports.cards import evaluation_reference, metric_cards
from metrics.reports.distribution import distribution_chart
from metrics.reports.keyword_table import FILTERS, keyword_table
from metrics.reports.segments import (
    EVERY_KEYWORD,
    SegmentChoice,
    SegmentMeans,
    segment_means_of,
    segment_problem,
    segment_table,
)
from metrics.reports.verdicts import (
    ad_hoc_regression_verdicts,
    model_regressed_evaluation_ids,
    standing_regression_verdict,
)
from metrics.selectors import metric_configs, metric_label
from metrics_engine.segment_sums import EVERY
from searchtweak import access
from searchtweak.models import Role, role_at_least
from searchtweak.views_shared import service_step_response

LIVE_STATUSES = {Evaluation.Status.FETCHING, Evaluation.Status.ACTIVE}


def _table_params(form: KeywordTableForm) -> dict:
    data = form.cleaned_data if form.is_valid() else {}
    return {
        "sort": data.get("sort") or "position", "descending": data.get("dir") == "desc",
        "show": data.get("show") or "", "search": data.get("q") or "",
        "page_number": data.get("page"), "after": data.get("after"),
        "before": data.get("before"),
    }


@dataclass
class DashboardRequest:
    """What every part of the evaluation dashboard reads: the evaluation (through its access
    function), its metric configs, the query-string form and the segment it chose."""

    request: HttpRequest
    evaluation: Evaluation
    configs: list[EvaluationMetric]
    form: KeywordTableForm
    choice: SegmentChoice = EVERY_KEYWORD
    # The chosen keywords' count when the distribution's statement counted them (the cards
    # and chart come before the table on the page): the table's count then costs nothing.
    segment_count: int | None = None

    @cached_property
    def means(self) -> SegmentMeans:
        """The evaluation's segment means, read once for the request (one query)."""
        return segment_means_of(self.configs)


def _dashboard_request(request: HttpRequest, evaluation_id: int) -> DashboardRequest:
    """The dashboard's request with its segment choice checked: a tag no keyword carries
    is an error on `segment` (the page then shows every keyword)."""
    evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
    configs = metric_configs(evaluation.pk)
    form = KeywordTableForm(request.GET, configs=configs)
    dashboard = DashboardRequest(request, evaluation, configs, form)
    if form.is_valid():
        segment = form.cleaned_data["segment"]
        problem = segment_problem(
            means=dashboard.means, segment=segment,
            keywords=Keyword.objects.filter(evaluation=evaluation)) if segment else None
        if problem:
            form.add_error("segment", f"{problem} Every keyword is shown.")
        else:
            dashboard.choice = SegmentChoice(segment, form.cleaned_data["weighted"])
    return dashboard


def _live_context(dashboard: DashboardRequest) -> dict:
    evaluation, configs, form = dashboard.evaluation, dashboard.configs, dashboard.form
    choice = dashboard.choice
    data = form.cleaned_data if form.is_valid() else {}
    reference = evaluation_reference(evaluation=evaluation,
                                     against=data.get("against") or "")
    cards = metric_cards(
        evaluation=evaluation, reference=reference, configs=configs,
        verdict=standing_regression_verdict(evaluation=evaluation)
        if reference.evaluation is not None and choice.everything_plain else None,
        choice=choice, means=dashboard.means if not choice.everything_plain else None)
    dist_config = next((c for c in configs if c.pk == data.get("dist")),
                       configs[0] if configs else None)
    chart = None if dist_config is None else distribution_chart(config=dist_config,
                                                                 choice=choice)
    dashboard.segment_count = chart.segment_count if chart else None
    return {
        "evaluation": evaluation, "reference": reference, "choice": choice,
        # A segment's card has no history of its own to draw (the stored one is every
        # keyword's): the card says so instead of an empty frame.
        "cards": [(card, "" if card.segmented else mark_safe(charts.sparkline(
            card.history, label=f"History of {card.label}"))) for card in cards],
        "agreement": evaluation_agreement(evaluation=evaluation, configs=configs),
        "distribution": chart and {**vars(chart), "svg": mark_safe(chart.svg)},
        "segment_table": segment_table(configs=configs, means=dashboard.means),
        "segment_links": _segment_links(dashboard),
        "live": evaluation.status in LIVE_STATUSES,
        "can_lead": access.current_team_can(user=dashboard.request.user,
                                            team_id=evaluation.team_id,
                                            minimum_role=Role.LEAD),
    }


def _segment_links(dashboard: DashboardRequest) -> list[tuple[str, str, bool]]:
    """(segment, the page's query string choosing it, chosen) for every keyword and each
    tag: the segment table's headings link to them, keeping the weights' choice."""
    data = dashboard.form.data
    return [(segment, query_with(data, segment=segment, page="", after="", before=""),
             segment == dashboard.choice.segment)
            for segment in [EVERY, *dashboard.means.tags]]


def query_with(data, **changes) -> str:
    """The page's query string with some parameters replaced ("" removes one)."""
    query = data.copy()
    for name, value in changes.items():
        query.pop(name, None)
        if value:
            query[name] = value
    return query.urlencode()


def _table_context(dashboard: DashboardRequest) -> dict:
    evaluation, configs, form = dashboard.evaluation, dashboard.configs, dashboard.form
    choice = dashboard.choice
    params = _table_params(form)
    visibility = access.grade_visibility(user=dashboard.request.user)
    segment_counts = None
    if choice.segment:
        segment_counts = {config.pk: mean.keyword_count for config in configs
                          if (mean := dashboard.means.get(config.pk, SegmentChoice(
                              choice.segment))) is not None}
    unfiltered = not params["show"] and not params["search"]
    table = keyword_table(evaluation=evaluation, configs=configs, visibility=visibility,
                          tag=choice.segment, tag_value_counts=segment_counts,
                          known_count=dashboard.segment_count if unfiltered else None,
                          **params)
    data = form.data

    def sort_link(key: str) -> dict:
        active = params["sort"] == key
        descending = not params["descending"] if active else key.startswith("m")
        return {"query": query_with(data, sort=key, dir="desc" if descending else "asc",
                                    page="", after="", before=""),
                "active": active, "descending": params["descending"] if active else None}

    return {
        "evaluation": evaluation, "configs": configs, "table": table, "params": params,
        "form": form, "choice": choice,
        "sees_all_grades": visibility.sees_everyone(evaluation.team_id),
        "sort_links": {"position": sort_link("position"), "text": sort_link("text")},
        "metric_columns": [(config, metric_label(config), sort_link(f"m{config.pk}"))
                           for config in configs],
        "filter_links": [(key, name, query_with(data, show=key, page="", after="", before=""),
                          params["show"] == key)
                         for key, name in FILTERS.items()],
        "page_query": query_with(data, page="", after="", before=""),
    }


ContextBuilder = Callable[[DashboardRequest], dict]


def _dashboard_response(request: HttpRequest, evaluation_id: int, template: str,
                        *parts: ContextBuilder) -> HttpResponse:
    """The dashboard page or one of its polled fragments: the evaluation through its access
    function, its metric configs, the query-string form they all read, and the context of
    each part, in order (the table takes the count the distribution made); a query string
    the form refuses (a segment no keyword has included) answers 400 with the defaults
    shown and the reason."""
    dashboard = _dashboard_request(request, evaluation_id)
    context: dict = {}
    for part in parts:
        context.update(part(dashboard))
    return render(request, template, context,
                  status=200 if dashboard.form.is_valid() else 400)


def _selector_context(dashboard: DashboardRequest) -> dict:
    """The segment selector at the top of the page: the tags to choose from and the rest
    of the query string, kept as it is (the page it shows starts again at 1)."""
    kept = dashboard.form.data.copy()
    for name in ("segment", "weighted", "page", "after", "before"):
        kept.pop(name, None)
    return {"segment_tags": dashboard.means.tags,
            "kept_params": [(name, value) for name, values in kept.lists()
                            for value in values]}


@require_GET
@login_required
def evaluation_dashboard(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    return _dashboard_response(request, evaluation_id, "metrics/evaluation_dashboard.html",
                               _selector_context, _live_context, _table_context,
                               _verdict_context, _online_context)


def _online_context(dashboard: DashboardRequest) -> dict:
    """What users did, beside the offline metrics (the page only: behaviour changes by
    imports and batches, not while grades arrive)."""
    evaluation = dashboard.evaluation
    return {"online": online_panel(query=dashboard.request.GET, team_id=evaluation.team_id,
                                   keyword_texts=evaluation.keywords.values("normalized_text"),
                                   evaluation_id=evaluation.pk)}


def _verdict_context(dashboard: DashboardRequest) -> dict:
    """The standing regression verdict and the newest ad-hoc ones, each with its rule (two
    queries; the page only, they change when a run finishes or a gate is called, not while
    grades arrive)."""
    evaluation = dashboard.evaluation
    return {"verdict": standing_regression_verdict(evaluation=evaluation),
            "ad_hoc_verdicts": ad_hoc_regression_verdicts(evaluation=evaluation)}


@require_GET
@login_required
def evaluation_dashboard_live(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """The cards, progress, agreement, distribution and segment table, polled while grades
    arrive."""
    return _dashboard_response(request, evaluation_id, "metrics/_evaluation_live.html",
                               _live_context)


@require_GET
@login_required
def evaluation_dashboard_table(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    """The per-keyword table alone, with the page's query string (polled while live)."""
    return _dashboard_response(request, evaluation_id, "metrics/_keyword_table.html",
                               _table_context)


@require_POST
@login_required
def baseline(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                         minimum_role=Role.LEAD)
    form = BaselineForm(request.POST)
    if not form.is_valid():
        return HttpResponse("action must be set or clear", status=400)
    dashboard_url = reverse("metrics:evaluation_dashboard", args=[evaluation.pk])
    if form.cleaned_data["action"] == "clear":
        services.team_baseline_clear(team=evaluation.team)
        messages.success(request, "The team has no baseline now.")
        return redirect(dashboard_url)
    return service_step_response(
        request, lambda: services.team_baseline_set(team=evaluation.team,
                                                    evaluation=evaluation, user=request.user),
        done=f"{evaluation.name} is now the team's baseline.", next_url=dashboard_url)


@require_GET
@login_required
def team_dashboard(request: HttpRequest) -> HttpResponse:
    membership = access.current_membership(user=request.user)
    if membership is None:
        messages.info(request, "Join or create a team to see its dashboard.")
        return redirect("home")
    dashboard = team_overview.team_dashboard(team=membership.team, user=request.user)
    return render(request, "metrics/team_dashboard.html", {
        "team": membership.team, "dashboard": dashboard,
        "activity_svg": mark_safe(charts.line_chart(
            dashboard.daily_counts, width=560, height=180, y_min=0, integer=True,
            label="Grades per day, last 14 days")),
        "can_lead": access.membership_allows(membership, minimum_role=Role.LEAD),
    })


def _unit_range(values: list[float | None]) -> dict:
    """y from 0 to 1 for values that all lie there (most metrics); the unbounded ones (CG,
    DCG) keep a range around their own values."""
    present = [value for value in values if value is not None]
    return {"y_min": 0.0, "y_max": 1.0} if all(0.0 <= v <= 1.0 for v in present) else {}


def regressed_evaluation_ids(*, model) -> set[int]:
    """The model's runs to mark as regressed on its history chart: those whose latest
    regression verdict says so (metrics/reports/verdicts.py)."""
    return model_regressed_evaluation_ids(model_id=model.pk)


@require_GET
@login_required
def model_history(request: HttpRequest, model_id: int) -> HttpResponse:
    model = search_model_get_for_user(user=request.user, model_id=model_id)
    form = SegmentForm(request.GET)
    choice = EVERY_KEYWORD
    if form.is_valid():
        choice = SegmentChoice(form.cleaned_data["segment"], form.cleaned_data["weighted"])
    history = metric_history.model_history(model=model, choice=choice)
    if choice.segment:
        problem = segment_problem(
            means=SegmentMeans({}, history.tags), segment=choice.segment,
            owner="the model's finished evaluations", keywords=Keyword.objects.filter(
                evaluation__model=model, evaluation__status=Evaluation.Status.FINISHED))
        if problem:
            form.add_error("segment", f"{problem} Every keyword is shown.")
            choice = EVERY_KEYWORD
            history = metric_history.model_history(model=model)
    # A weighted mean has no bootstrap interval here: the whiskers are left out.
    intervals = {} if choice.weighted else compare_many_stats.config_intervals(
        configs=[config for line in history.histories for config in line.configs],
        segment=choice.segment)
    regressed = regressed_evaluation_ids(model=model)
    rows = []
    for line in history.histories:
        bands = [intervals.get(config.pk) for config in line.configs]
        rows.append((line, mark_safe(charts.line_chart(
            [(evaluation.name, value) for evaluation, value, _ in line.points],
            label=f"{line.label} over finished evaluations, {choice.label}, with "
                  f"{'' if choice.weighted else '95% intervals and '}the bounds under "
                  "missing grades shaded",
            intervals=bands, bands=line.bounds,
            marked=[evaluation.pk in regressed for evaluation, _, _ in line.points],
            **_unit_range([value for _, value, _ in line.points]
                          + [b for band in [*bands, *line.bounds] if band for b in band]))),
            [(*point, band, point[0].pk in regressed)
             for point, band in zip(line.points, bands, strict=True)]))
    return render(request, "metrics/model_history.html", {
        "model": model, "histories": rows, "form": form, "choice": choice,
        "segment_tags": history.tags}, status=200 if form.is_valid() else 400)


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
    a = evaluation_get_for_user(user=request.user, evaluation_id=form.cleaned_data["a"])
    b = evaluation_get_for_user(user=request.user, evaluation_id=form.cleaned_data["b"])
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
        **_picker_context(request),
    }, status=400 if problem else 200)


@require_GET
@login_required
def compare_keyword(request: HttpRequest) -> HttpResponse:
    form = CompareKeywordForm(request.GET)
    if not form.is_valid():
        return render(request, "metrics/compare_keyword.html", {"form": form}, status=400)
    a = evaluation_get_for_user(user=request.user, evaluation_id=form.cleaned_data["a"])
    b = evaluation_get_for_user(user=request.user, evaluation_id=form.cleaned_data["b"])
    text = Keyword.normalize(form.cleaned_data["keyword"])
    visibility = access.grade_visibility(user=request.user)
    keyword_a, keyword_b, rows = comparisons.keyword_side_by_side(
        a=a, b=b, normalized_text=text, visibility=visibility)
    return render(request, "metrics/compare_keyword.html", {
        "form": form, "a": a, "b": b, "keyword_a": keyword_a, "keyword_b": keyword_b,
        "sees_all_grades": all(visibility.sees_everyone(e.team_id) for e in (a, b)),
        "rows": rows, "text": (keyword_a or keyword_b).text if keyword_a or keyword_b else text,
    }, status=200 if keyword_a or keyword_b else 404)


@require_GET
@login_required
def leaderboard(request: HttpRequest) -> HttpResponse:
    membership = access.current_membership(user=request.user)
    if membership is None:
        messages.info(request, "Join or create a team to see its leaderboards.")
        return redirect("home")
    form = LeaderboardForm(request.GET)
    metric = form.cleaned_data.get("metric", "") if form.is_valid() else ""
    graders = leaderboards.grader_leaderboard(team=membership.team)
    return render(request, "metrics/leaderboard.html", {
        "team": membership.team, "form": form,
        "models": leaderboards.model_leaderboard(team=membership.team, metric=metric),
        "graders": graders,
        # The notice of graders below the gold bar is a lead's to act on.
        "gold_low": [grader for grader in graders if grader.gold.low]
        if role_at_least(membership.role, Role.LEAD) else [],
        "gold_threshold": GOLD_ACCURACY_THRESHOLD, "gold_min_answers": GOLD_MIN_ANSWERS,
        "gold_drift_window": DRIFT_WINDOW,
    })
