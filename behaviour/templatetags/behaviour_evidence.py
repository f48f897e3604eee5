"""A clicks grader's evidence where a judges page shows it (its calibration page, a run's
page): tags the judges' templates load by name, so that judges, below behaviour, never
import it. Reads are behaviour.evidence's."""

from django import template

from behaviour import evidence

register = template.Library()


@register.inclusion_tag("behaviour/_learned_evidence.html")
def learned_evidence_of_calibration(judge, evaluation) -> dict:
    """The learned grades furthest from the people's on the evaluation, with their
    evidence and the run's exports."""
    found = evidence.calibration_evidence(judge=judge, evaluation=evaluation)
    return {"learned": found, "run": found.run if found else None, "compare": True}


@register.inclusion_tag("behaviour/_learned_evidence.html")
def learned_evidence_of_run(run) -> dict:
    """The run's first learned grades in the evaluation's order, and its exports."""
    return {"learned": evidence.run_evidence_shown(run=run), "run": run, "compare": False}
