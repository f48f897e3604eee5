"""Questions evaluations asks about scales and transformers, answered by a higher app.

Scales that admins define and team transformers live in judgments, which may import
evaluations but not the other way round. judgments registers its answers at start-up
(`register_scale_provider`); until then only the built-in scales of metrics_engine exist.
`team_scale` is the one way evaluations and metrics turn a team's scale code into a scale.
"""

from collections.abc import Callable
from dataclasses import dataclass

import metrics_engine as core
from searchtweak.models import Team


@dataclass(frozen=True)
class ScaleProvider:
    # (code, label) of every scale a team may grade on, built-ins included.
    choices: Callable[[Team], list[tuple[str, str]]]
    # (lo, hi) of a scale code for the team, or None when unknown.
    bounds: Callable[[Team, str], tuple[int, int] | None]
    # The team's transformer mappings {"src->dst": {"grade": grade}}, overriding defaults.
    transformers: Callable[[Team], dict[str, dict[str, int]]]


def _builtin_bounds(team: Team, code: str) -> tuple[int, int] | None:
    scale = core.SCALES.get(code)
    return (scale.lo, scale.hi) if scale else None


def _builtin_provider() -> ScaleProvider:
    return ScaleProvider(
        choices=lambda team: [(scale.code, f"{scale.name} ({scale.lo}..{scale.hi})")
                              for scale in core.SCALES.values()],
        bounds=_builtin_bounds,
        transformers=lambda team: {},
    )


_provider: ScaleProvider = _builtin_provider()


def register_scale_provider(provider: ScaleProvider) -> None:
    global _provider
    _provider = provider


def scale_provider() -> ScaleProvider:
    return _provider


def team_scale(team: Team, code: str) -> core.Scale | None:
    """The scale ``code`` as ``team`` grades on it: a built-in of metrics_engine, else the
    team's own scale (asked of the provider), or None when the team has no such scale."""
    if code in core.SCALES:
        return core.SCALES[code]
    bounds = _provider.bounds(team, code)
    if bounds is None:
        return None
    return core.Scale(code, bounds[0], bounds[1])


def team_scales(team: Team) -> dict[str, core.Scale]:
    """Every scale ``team`` grades on, by code: the built-ins and the team's own."""
    found = {code: team_scale(team, code) for code, _ in _provider.choices(team)}
    return {code: scale for code, scale in found.items() if scale is not None}

