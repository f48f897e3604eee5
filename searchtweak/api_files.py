"""Content negotiation for API views that answer files (CSV, TREC) themselves, and the
streamed response they answer large files with."""

from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.settings import api_settings


class _NoFormatOverride:
    URL_FORMAT_OVERRIDE = None

    def __getattr__(self, name: str):
        return getattr(api_settings, name)


class FileContentNegotiation(DefaultContentNegotiation):
    """`?format=` names a file format on these views, not a DRF renderer; and a client
    that accepts only text/csv still gets the file, which the view answers itself."""

    settings = _NoFormatOverride()

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix=None)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type


class FileStreamResponse(StreamingHttpResponse):
    """A download written as it is read (pieces of text, encoded as UTF-8), so a file of a
    million lines costs the server a piece, not the file. `content` joins the stream for the
    callers that want the body whole (tests, a script reading a small export); reading it
    consumes the stream, as iterating it would, and keeps the body for the next read."""

    def __init__(self, pieces: Iterable[str], *, content_type: str, filename: str,
                 disposition: str = "attachment") -> None:
        super().__init__(_encoded(pieces), content_type=content_type)
        self["Content-Disposition"] = f'{disposition}; filename="{filename}"'

    @property
    def content(self) -> bytes:
        if not hasattr(self, "_joined"):
            self._joined = b"".join(self.streaming_content)
        return self._joined

    @property
    def text(self) -> str:
        return self.content.decode(self.charset)


def _encoded(pieces: Iterable[str]) -> Iterator[bytes]:
    for piece in pieces:
        yield piece.encode("utf-8")
