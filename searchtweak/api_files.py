"""Content negotiation for API views that answer files (CSV, TREC) themselves."""

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
