"""Judges that grade in-process (clicks) instead of through lanes of HTTP calls: their
apps sit above this one and register, at start-up, what to call with a run's id after the
commit that started or resumed it, and when the sweep finds the run stalled."""

from collections.abc import Callable

_dispatchers: dict[str, Callable[[int], None]] = {}


def register_local_grader(provider: str, dispatch: Callable[[int], None]) -> None:
    _dispatchers[provider] = dispatch


def local_dispatcher(provider: str) -> Callable[[int], None] | None:
    return _dispatchers.get(provider)
