from typing import Any

from rest_framework.request import Request
from rest_framework.serializers import Serializer


def sent_changes(serializer_class: type[Serializer], request: Request, *,
                 leave_out: tuple[str, ...] = ("team",)) -> dict[str, Any]:
    """The checked fields of a PATCH that the caller sent (a 400 naming each bad one):
    only the keys in the body, never a serializer's default standing in for a key left
    out, and not those in `leave_out` (a team is chosen by the URL and the caller)."""
    serializer = serializer_class(data=request.data, partial=True)
    serializer.is_valid(raise_exception=True)
    return {key: value for key, value in serializer.validated_data.items()
            if key in request.data and key not in leave_out}
