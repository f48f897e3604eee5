"""Judges that grade in-process (clicks) instead of through lanes of HTTP calls: their
apps sit above this one and register, at start-up, what to call with a run's id after the
commit that started or resumed it, and when the sweep finds the run stalled; and what
tells the run's estimate how many of its pairs would get a grade."""

from collections.abc import Callable

GradableCount = Callable[..., int]
"""(judge=, evaluation=, pairs=[(snapshot_id, keyword_id), ...]) -> how many of the pairs
a run would grade now (the rest would fail, e.g. too few impressions)."""

_dispatchers: dict[str, Callable[[int], None]] = {}
_gradable_counts: dict[str, GradableCount] = {}


def register_local_grader(provider: str, dispatch: Callable[[int], None],
                          gradable_count: GradableCount | None = None) -> None:
    _dispatchers[provider] = dispatch
    if gradable_count is not None:
        _gradable_counts[provider] = gradable_count


def local_dispatcher(provider: str) -> Callable[[int], None] | None:
    return _dispatchers.get(provider)


def local_gradable_count(provider: str) -> GradableCount | None:
    return _gradable_counts.get(provider)
