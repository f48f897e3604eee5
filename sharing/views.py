"""A lead's share links (make, list, revoke) and the page a link's visitor sees.

The visitor's page is the dashboard or comparison a viewer sees (metrics.views and
metrics.views_compare render them), with nobody's grades, no person's name and no link
out, on a page with no nav."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations.selectors import evaluation_get_for_user
from metrics import views as metric_views
from metrics import views_compare
from metrics.forms import CompareForm
from searchtweak import access
from searchtweak.forms import add_service_errors
from searchtweak.selectors import team_get_for_user
from sharing import selectors, services
from sharing.forms import ShareLinkForm, ShareTargetForm
from sharing.models import ShareLink

SHARED_BASE = "sharing/base.html"


@require_http_methods(["GET", "POST"])
@login_required
def share_create(request: HttpRequest) -> HttpResponse:
    target = ShareTargetForm(request.GET)
    if not target.is_valid():
        return render(request, "sharing/create.html", {"target": target}, status=400)
    data = target.cleaned_data
    first_id = data["evaluation"] or data["a"]
    evaluation = evaluation_get_for_user(user=request.user, evaluation_id=first_id,
                                         minimum_role=selectors.SHARE_ROLE)
    other = None if data["evaluation"] else evaluation_get_for_user(
        user=request.user, evaluation_id=data["b"], minimum_role=selectors.SHARE_ROLE)
    form = ShareLinkForm(request.POST or None)
    context = {"target": target, "form": form, "evaluation": evaluation, "other": other}
    if request.method == "POST" and form.is_valid():
        try:
            link, token = services.share_link_create(
                evaluation=evaluation, other_evaluation=other, created_by=request.user,
                days=form.cleaned_data["days"])
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            # Shown this once: only its hash is stored.
            return render(request, "sharing/created.html", {
                "link": link,
                "url": request.build_absolute_uri(reverse("sharing:shared", args=[token]))})
    return render(request, "sharing/create.html", context,
                  status=400 if form.is_bound else 200)


@require_GET
@login_required
def share_list(request: HttpRequest, team_id: int) -> HttpResponse:
    team = team_get_for_user(user=request.user, team_id=team_id,
                             minimum_role=selectors.SHARE_ROLE)
    return render(request, "sharing/list.html", {
        "team": team, "links": selectors.team_share_links(team=team)})


@require_POST
@login_required
def share_revoke(request: HttpRequest, link_id: int) -> HttpResponse:
    link = selectors.share_link_get_for_user(user=request.user, link_id=link_id)
    try:
        services.share_link_revoke(link=link, revoked_by=request.user)
    except ValidationError as error:
        messages.info(request, " ".join(error.messages))
    else:
        messages.success(request, "The link is revoked: it opens nothing now.")
    return redirect("sharing:share_list", team_id=link.team_id)


@require_GET
def shared(request: HttpRequest, token: str) -> HttpResponse:
    """What the link shows, to whoever holds it, signed in or not: the same page for a
    team's owner as for a stranger (the link, not the visitor, decides)."""
    try:
        link = selectors.share_link_by_token(token)
    except selectors.LinkGone as gone:
        response = render(request, "sharing/gone.html", {"link": gone.link,
                                                         "state": gone.state}, status=410)
    else:
        response = _shared_page(request, link)
    # The token is in the address: keep it out of referrers, indexes and shared caches.
    response["Referrer-Policy"] = "no-referrer"
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Cache-Control"] = "private, no-store"
    return response


def _nobodys() -> tuple[access.GradeVisibility, bool]:
    """A share link's reader: nobody's grades, no person named."""
    return access.GradeVisibility(None, frozenset()), False


def _shared_page(request: HttpRequest, link: ShareLink) -> HttpResponse:
    extra = {"shared": True, "base_template": SHARED_BASE, "share_link": link}
    if link.kind == ShareLink.Kind.DASHBOARD:
        dashboard = metric_views.dashboard_request_of(
            request, link.evaluation, reader=_nobodys)
        return metric_views.dashboard_response(
            dashboard, "metrics/evaluation_dashboard.html", *metric_views.DASHBOARD_PARTS,
            extra=extra)
    # A and B are the link's; the query string only sorts, pages and chooses the segment.
    data = request.GET.copy()
    data["a"], data["b"] = str(link.evaluation_id), str(link.other_evaluation_id)
    form = CompareForm(data)
    if not form.is_valid():
        return render(request, "sharing/gone.html", {"link": link, "state": "invalid",
                                                     "form": form}, status=400)
    return views_compare.comparison_response(request, form, link.evaluation,
                                            link.other_evaluation, extra=extra)
