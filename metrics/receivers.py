"""Where other apps' announcements turn into recompute work (connected in apps.ready)."""

import logging

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluations.models import EvaluationMetric, Keyword
from metrics import core

logger = logging.getLogger(__name__)


def _enqueue(task, *args) -> None:
    # A broker that is down must not fail the grade that already committed: the keyword
    # stays dirty and the periodic sweep repairs it.
    try:
        task.delay(*args)
    except Exception:
        logger.exception("could not enqueue %s%r; the sweep will retry", task.name, args)


def on_grades_changed(sender, *, keyword_ids, **kwargs) -> None:
    from metrics.tasks import recompute_keyword

    keyword_ids = set(keyword_ids) | set(_pool_siblings_mark_dirty(keyword_ids))
    for keyword_id in sorted(keyword_ids):
        _enqueue(recompute_keyword, keyword_id)


def _pool_siblings_mark_dirty(keyword_ids) -> list[int]:
    """A grade changes the pool of every keyword of the team with the same text and scale;
    those whose evaluation uses a pool metric are marked dirty too."""
    changed = list(Keyword.objects.filter(pk__in=keyword_ids).values_list(
        "normalized_text", "evaluation__team_id", "evaluation__scale"))
    if not changed:
        return []
    pool_configs = [
        config for config in EvaluationMetric.objects.filter(
            evaluation__team_id__in={team for _, team, _ in changed},
        ).only("evaluation_id", "code", "params")
        if config.code in core.METRICS and _uses_pool(config)
    ]
    if not pool_configs:
        return []
    siblings = Keyword.objects.filter(
        evaluation_id__in={config.evaluation_id for config in pool_configs},
        normalized_text__in={text for text, _, _ in changed},
    ).exclude(pk__in=keyword_ids)
    wanted = {(text, team, scale) for text, team, scale in changed}
    sibling_ids = [
        pk for pk, text, team, scale in siblings.values_list(
            "pk", "normalized_text", "evaluation__team_id", "evaluation__scale")
        if (text, team, scale) in wanted
    ]
    if sibling_ids:
        with transaction.atomic():
            Keyword.objects.filter(pk__in=sibling_ids).update(
                version=F("version") + 1,
                dirty_since=Coalesce(F("dirty_since"), Value(timezone.now())),
            )
    return sibling_ids


def _uses_pool(config: EvaluationMetric) -> bool:
    try:
        return core.needs_pool(config.code, core.resolve_params(config.params))
    except core.MetricInputError:
        return False


def on_metric_configs_changed(sender, *, instance: EvaluationMetric, **kwargs) -> None:
    from metrics.tasks import recompute_evaluation

    evaluation_id = instance.evaluation_id
    transaction.on_commit(lambda: _enqueue(recompute_evaluation, evaluation_id))
