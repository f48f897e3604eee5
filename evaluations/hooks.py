"""Questions evaluations asks about scales and transformers, answered by a higher app.

Scales that admins define and team transformers live in judgments, which may import
evaluations but not the other way round. judgments registers its answers at start-up
(`register_scale_provider`); until then only the built-in scales of metrics.core exist.
"""

from collections.abc import Callable
from dataclasses import dataclass

from searchtweak.models import Team


@dataclass(frozen=True)
class ScaleProvider:
    # (code, label) of every scale a team may grade on, built-ins included.
    choices: Callable[[Team], list[tuple[str, str]]]
    # (lo, hi) of a scale code for the team, or None when unknown.
    bounds: Callable[[Team, str], tuple[int, int] | None]
    # The team's transformer mappings {"src->dst": {"grade": grade}}, overriding defaults.
    transformers: Callable[[Team], dict[str, dict[str, int]]]


_BUILTIN_SCALES: dict[str, tuple[str, int, int]] = {
    "binary": ("Binary (0 Irrelevant, 1 Relevant)", 0, 1),
    "graded": ("Graded (0 Poor … 3 Perfect)", 0, 3),
    "detail": ("Detail (1 … 10)", 1, 10),
}


def _builtin_provider() -> ScaleProvider:
    return ScaleProvider(
        choices=lambda team: [(code, label) for code, (label, _, _) in _BUILTIN_SCALES.items()],
        bounds=lambda team, code: _BUILTIN_SCALES[code][1:] if code in _BUILTIN_SCALES else None,
        transformers=lambda team: {},
    )


_provider: ScaleProvider = _builtin_provider()


def register_scale_provider(provider: ScaleProvider) -> None:
    global _provider
    _provider = provider


def scale_provider() -> ScaleProvider:
    return _provider
