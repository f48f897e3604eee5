"""One scan of the static files per settings, however many test Clients the suite makes.

WhiteNoise lists and stats every file the staticfiles finders know when its middleware is
built (WHITENOISE_USE_FINDERS is on in every mode), and Django's test Client builds the
whole middleware chain afresh for each Client it makes. A server process builds it once;
the suite built it for nearly every test, and for each of the access matrix's six personas
per row: about 60 ms a Client, two thirds of the matrix's time in a profile.

The scan's result is kept and handed to every later middleware, and dropped whenever a
setting changes (`settings` fixture, override_settings), since its headers and paths
follow the settings. Files under static/ do not change during a run.
"""

from django.core.signals import setting_changed
from whitenoise.middleware import WhiteNoiseMiddleware

_scan_through_finders = WhiteNoiseMiddleware.add_files_from_finders
_scanned_files: dict = {}


def _add_files_from_finders_once(middleware: WhiteNoiseMiddleware) -> None:
    if not _scanned_files:
        before = dict(middleware.files)
        _scan_through_finders(middleware)
        _scanned_files.update({url: static_file for url, static_file in middleware.files.items()
                               if before.get(url) is not static_file})
        return
    middleware.files.update(_scanned_files)


def _forget_the_scan(**kwargs) -> None:
    _scanned_files.clear()


def install() -> None:
    WhiteNoiseMiddleware.add_files_from_finders = _add_files_from_finders_once
    setting_changed.connect(_forget_the_scan, dispatch_uid="tests.static_files_once")
