"""Evaluations judged by a rule of their own, which a higher app knows.

A schedule's run is judged by its schedule's rule (coverage, threshold, segments,
weighting) against the baseline its schedule chose, and the schedules app stores that
standing verdict when the run finishes; the gate
(metrics.reports.verdicts.gate_baseline_and_rule) takes the same rule and baseline unless
told otherwise, and the verdict on finish (regression_verdict_on_finish)
leaves such an evaluation to that app. metrics may not import schedules: schedules
registers at start-up (`register_own_rule`) the function that answers for an evaluation.
Until then every evaluation is judged by the team's rule.
"""

from collections.abc import Callable
from dataclasses import dataclass

from evaluations.models import Evaluation
from metrics_engine.verdicts import VerdictRule


@dataclass(frozen=True)
class OwnRule:
    rule: VerdictRule
    # The evaluation it is compared with, or None and why not; read only when asked.
    baseline: Callable[[], tuple[Evaluation | None, str]]


_own_rule: Callable[[Evaluation], OwnRule | None] = lambda evaluation: None  # noqa: E731


def register_own_rule(provider: Callable[[Evaluation], OwnRule | None]) -> None:
    global _own_rule
    _own_rule = provider


def own_rule(evaluation: Evaluation) -> OwnRule | None:
    """The evaluation's own rule, or None when the team's rule judges it."""
    return _own_rule(evaluation)
