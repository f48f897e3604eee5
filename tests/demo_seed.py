"""The demo of `manage.py seed_demo`, made once per test process for the browser tests."""

from django.core.management import call_command

from tests.table_copies import build_once


def seeded_demo(**options) -> None:
    """The database as `seed_demo` (with these options) leaves an empty one: the first call
    in this process runs the command, later ones put its rows back (tests.table_copies).
    For transactional tests, which start empty; a test that checks the command itself
    calls it."""
    build_once(f"seed_demo {sorted(options.items())}",
               lambda: call_command("seed_demo", verbosity=0, **options))
