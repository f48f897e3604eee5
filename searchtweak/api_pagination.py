from collections.abc import Callable, Iterable
from typing import Any

from rest_framework import pagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class PageNumberPagination(pagination.PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500


def paginated_response(
    view: APIView, request: Request, items: Iterable[Any],
    serialize_page: Callable[[list[Any]], list[dict]],
) -> Response:
    """`{"count", "next", "previous", "results"}` of one page; `serialize_page` gets the
    page's items at once, so it can load what they need in a constant number of queries."""
    paginator = PageNumberPagination()
    page = paginator.paginate_queryset(items, request, view=view)
    return paginator.get_paginated_response(serialize_page(list(page)))
