"""The rank-eval export form's metric choices, from the export's own mapping
(metrics.rank_eval.metric_choices): a page offers exactly what the export takes.

A tag, so the judgments page that holds the form reads the mapping without judgments
importing metrics (metrics sits above judgments)."""

from django import template

from evaluations.models import Evaluation
from metrics.rank_eval import metric_choices

register = template.Library()


@register.simple_tag
def rank_eval_metric_choices(evaluation: Evaluation) -> list[tuple[str, str]]:
    """(value, label) of each of the evaluation's metrics Elasticsearch has, in the
    evaluation's order; empty when none has."""
    return metric_choices(evaluation)
