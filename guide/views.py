"""The user guide's pages. Anyone may read them, signed in or not
(docs/decisions/0011-the-user-guide-at-help.md)."""

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from guide import pages


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return page(request, pages.INDEX)


@require_GET
def page(request: HttpRequest, name: str) -> HttpResponse:
    if name == pages.INDEX and request.resolver_match.url_name == "page":
        return redirect("guide:index", permanent=True)
    shown = pages.render(name)
    if shown is None:
        raise Http404("No such page in the user guide.")
    return render(request, "guide/page.html",
                  {"page": shown, "contents": pages.contents(), "index_url": pages.page_url(
                      pages.INDEX)})
