"""The recompute pipeline (DESIGN.md): stored metric values always follow the grades.

Every write is labelled with the keyword version whose grades produced it and only lands
if nothing newer landed first, so runs may overlap, repeat or arrive out of order and the
stored values still end equal to a from-scratch recompute.
"""

import logging
from collections.abc import Iterable
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Avg, Count, F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluations import hooks
from evaluations.models import Evaluation, EvaluationMetric, Keyword
from judgments.models import FeedbackSlot
from metrics import core
from metrics.models import KeywordMetricValue, MetricHistoryPoint, TeamBaseline
from metrics.selectors import (
    KeywordResults,
    evaluation_grade_array,
    evaluation_metric_configs,
    keyword_pool_others,
    keyword_results,
)
from searchtweak.models import Team, User

logger = logging.getLogger(__name__)

# Rows per INSERT/UPDATE statement: far below SQLite's 32,766 bound parameters.
_WRITE_CHUNK = 2000


class RecomputeConflict(Exception):
    """A transient conflict (e.g. a deadlock victim); the task retries."""


def evaluation_scale(evaluation: Evaluation) -> core.Scale | str:
    if evaluation.scale in core.SCALES:
        return evaluation.scale
    bounds = hooks.scale_provider().bounds(evaluation.team, evaluation.scale)
    if bounds is None:
        raise core.MetricInputError("scale", f"unknown scale {evaluation.scale!r}")
    return core.Scale(evaluation.scale, *bounds)


def evaluation_transformers(evaluation: Evaluation) -> dict:
    """The transformers from the evaluation's scale: the team's, overridden by the
    evaluation's own (METRICS.md stage 0). Team transformers between other scales are left
    out; they are not this evaluation's to validate."""
    prefix = f"{evaluation.scale}->"
    team_transformers = hooks.scale_provider().transformers(evaluation.team)
    return {
        **{key: mapping for key, mapping in team_transformers.items() if key.startswith(prefix)},
        **evaluation.transformers,
    }


def keyword_metrics_recompute(*, keyword_id: int) -> str:
    """Recompute every configured metric of one keyword and the evaluation's means.

    Returns what happened: "missing", "fresh" (nothing changed since the last run),
    "error" (stored on the evaluation) or "ok".
    """
    keyword = Keyword.objects.select_related("evaluation__team").filter(pk=keyword_id).first()
    if keyword is None:
        return "missing"
    if keyword.dirty_since is None and keyword.computed_version == keyword.version:
        return "fresh"
    version = keyword.version
    evaluation = keyword.evaluation
    configs = evaluation_metric_configs(evaluation_id=evaluation.pk)
    results = keyword_results(keyword_id=keyword.pk)
    try:
        values = _keyword_values(evaluation, keyword, configs, results)
    except core.MetricInputError as error:
        _record_error(evaluation, error)
        _mark_computed([(keyword.pk, version)])
        return "error"
    _upsert_values(
        (keyword.pk, config.pk, value, version)
        for config, value in zip(configs, values, strict=True)
    )
    _mark_computed([(keyword.pk, version)])
    evaluation_means_refresh(evaluation_id=evaluation.pk)
    return "ok"


def _keyword_values(
    evaluation: Evaluation, keyword: Keyword, configs: list[EvaluationMetric],
    results: KeywordResults,
) -> list[float | None]:
    scale = evaluation_scale(evaluation)
    transformers = evaluation_transformers(evaluation)
    pool = None
    if any(core.needs_pool(c.code, core.resolve_params(c.params)) for c in configs):
        pool = keyword_pool_others(keyword=keyword, evaluation=evaluation)
    return [
        core.evaluate_keyword(
            config.code, results.grades, doc_ids=results.doc_ids, k=config.k, scale=scale,
            params=config.params, transformers=transformers, pool=pool,
        )
        for config in configs
    ]


def evaluation_metrics_recompute(*, evaluation_id: int, progress=None) -> int:
    """Recompute every keyword of an evaluation from scratch with evaluate_batch.

    `progress`, if given, is called with the number of keywords done after each chunk.
    Returns the number of keywords recomputed.
    """
    evaluation = Evaluation.objects.select_related("team").filter(pk=evaluation_id).first()
    if evaluation is None:
        return 0
    configs = evaluation_metric_configs(evaluation_id=evaluation_id)
    keywords = list(Keyword.objects.filter(evaluation_id=evaluation_id)
                    .order_by("position").values_list("pk", "version"))
    keyword_ids = [pk for pk, _ in keywords]
    versions = dict(keywords)
    if not configs or not keyword_ids:
        _mark_computed(keywords)
        evaluation_means_refresh(evaluation_id=evaluation_id)
        if progress is not None:
            progress(len(keyword_ids))
        return len(keyword_ids)
    try:
        values_by_config = _batch_values(evaluation, configs, keyword_ids)
    except core.MetricInputError as error:
        _record_error(evaluation, error)
        _mark_computed(keywords)
        return 0
    for start in range(0, len(keyword_ids), _WRITE_CHUNK):
        chunk = keyword_ids[start:start + _WRITE_CHUNK]
        _upsert_values(
            (keyword_id, config.pk, _as_optional(values[start + offset]), versions[keyword_id])
            for config, values in zip(configs, values_by_config, strict=True)
            for offset, keyword_id in enumerate(chunk)
        )
        _mark_computed([(keyword_id, versions[keyword_id]) for keyword_id in chunk])
        if progress is not None:
            progress(len(chunk))
    evaluation_means_refresh(evaluation_id=evaluation_id, force_history=True)
    return len(keyword_ids)


def _batch_values(
    evaluation: Evaluation, configs: list[EvaluationMetric], keyword_ids: list[int]
) -> list[np.ndarray]:
    scale = evaluation_scale(evaluation)
    transformers = evaluation_transformers(evaluation)
    pooled = [core.needs_pool(c.code, core.resolve_params(c.params)) for c in configs]
    grades = evaluation_grade_array(
        evaluation=evaluation, keyword_ids=keyword_ids, positions=max(c.k for c in configs)
    )
    plain = [(c.code, c.k, c.params) for c, uses_pool in zip(configs, pooled, strict=True)
             if not uses_pool]
    plain_values = iter(core.evaluate_batch_many(
        plain, grades, scale=scale, transformers=transformers
    ) if plain else [])
    pool_values = iter(_pool_metric_values(
        evaluation, [c for c, uses_pool in zip(configs, pooled, strict=True) if uses_pool],
        keyword_ids, scale=scale, transformers=transformers,
    ) if any(pooled) else [])
    return [next(pool_values) if uses_pool else next(plain_values) for uses_pool in pooled]


def _pool_metric_values(
    evaluation: Evaluation, configs: list[EvaluationMetric], keyword_ids: list[int], *,
    scale, transformers: dict,
) -> list[np.ndarray]:
    # Pool metrics read other evaluations' grades per keyword text: gathered per keyword,
    # then evaluated together by the same engine path the per-keyword recompute uses.
    keywords = Keyword.objects.in_bulk(keyword_ids)
    results = [keyword_results(keyword_id=keyword_id) for keyword_id in keyword_ids]
    pools = [keyword_pool_others(keyword=keywords[keyword_id], evaluation=evaluation)
             for keyword_id in keyword_ids]
    return [
        core.evaluate_keywords(
            config.code, [r.grades for r in results], doc_ids=[r.doc_ids for r in results],
            k=config.k, scale=scale, params=config.params, transformers=transformers,
            pools=pools,
        )
        for config in configs
    ]


def _as_optional(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _upsert_values(rows: Iterable[tuple[int, int, float | None, int]]) -> None:
    """Write (keyword_id, metric_id, value, version) rows; a row computed from an older
    keyword version than the stored one is dropped, so late runs cannot overwrite."""
    table = connection.ops.quote_name(KeywordMetricValue._meta.db_table)
    now = timezone.now()
    rows = list(rows)
    for start in range(0, len(rows), _WRITE_CHUNK):
        chunk = rows[start:start + _WRITE_CHUNK]
        placeholders = ", ".join(["(%s, %s, %s, %s, %s)"] * len(chunk))
        params: list = []
        for keyword_id, metric_id, value, version in chunk:
            params += [keyword_id, metric_id, value, version, now]
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (keyword_id, metric_id, value, computed_version, updated_at)"
                f" VALUES {placeholders}"
                " ON CONFLICT (keyword_id, metric_id) DO UPDATE SET value = excluded.value,"
                " computed_version = excluded.computed_version, updated_at = excluded.updated_at"
                f" WHERE {table}.computed_version <= excluded.computed_version",
                params,
            )


def _mark_computed(keyword_versions: list[tuple[int, int]]) -> None:
    """Record that each keyword's values reflect `version`; clear its dirty mark only if no
    newer grade arrived meanwhile (compare-and-set on the version)."""
    table = connection.ops.quote_name(Keyword._meta.db_table)
    for start in range(0, len(keyword_versions), _WRITE_CHUNK):
        chunk = keyword_versions[start:start + _WRITE_CHUNK]
        placeholders = ", ".join(["(%s, %s)"] * len(chunk))
        params = [value for pair in chunk for value in pair]
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH computed (keyword_id, version) AS (VALUES {placeholders})"
                f" UPDATE {table} SET computed_version = computed.version,"
                f" dirty_since = CASE WHEN {table}.version = computed.version THEN NULL"
                f" ELSE {table}.dirty_since END"
                f" FROM computed WHERE {table}.id = computed.keyword_id"
                f" AND {table}.computed_version <= computed.version",
                params,
            )


def keyword_pool_siblings_mark_dirty(*, keyword_ids: Iterable[int]) -> list[int]:
    """A grade changes the pool of every keyword of the team with the same text and scale;
    those whose evaluation uses a pool metric are marked dirty too (returned, to enqueue).

    Called when grades change (metrics.receivers), after their commit, so the siblings'
    runs read a pool that includes them.
    """
    keyword_ids = list(keyword_ids)
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


def keyword_is_dirty(*, keyword_id: int) -> bool:
    return Keyword.objects.filter(pk=keyword_id, dirty_since__isnull=False).exists()


def evaluation_means_refresh(*, evaluation_id: int, force_history: bool = False) -> None:
    """Means over non-null keywords, keyword counts, a throttled history point, progress,
    and the automatic finish at 100 %."""
    with transaction.atomic():
        # Serialise refreshes of one evaluation: each reads after the previous wrote, so
        # the last refresh sees every value committed before it.
        evaluation = Evaluation.objects.select_for_update().get(pk=evaluation_id)
        means = {
            row["metric_id"]: row
            for row in KeywordMetricValue.objects.filter(
                metric__evaluation_id=evaluation_id, value__isnull=False
            ).values("metric_id").annotate(mean=Avg("value"), count=Count("id"))
        }
        now = timezone.now()
        configs = evaluation_metric_configs(evaluation_id=evaluation_id)
        for config in configs:
            row = means.get(config.pk, {"mean": None, "count": 0})
            config.value, config.keyword_count, config.updated_at = row["mean"], row["count"], now
        EvaluationMetric.objects.bulk_update(configs, ["value", "keyword_count", "updated_at"])
        _history_append(configs, now=now, force=force_history)
        slot_counts = FeedbackSlot.objects.filter(evaluation_id=evaluation_id).aggregate(
            total=Count("id"), graded=Count("id", filter=Q(grade__isnull=False))
        )
        progress = 100.0 * slot_counts["graded"] / slot_counts["total"] if slot_counts[
            "total"] else 0.0
        Evaluation.objects.filter(pk=evaluation_id).update(progress=progress, recompute_error="")
    if (
        progress >= 100.0 and evaluation.auto_finish
        and evaluation.status == Evaluation.Status.ACTIVE
    ):
        from evaluations.services import evaluation_finish

        evaluation_finish(evaluation=evaluation)


def _history_append(configs: list[EvaluationMetric], *, now, force: bool) -> None:
    interval = timedelta(seconds=settings.METRIC_HISTORY_INTERVAL_SECONDS)
    latest = {
        point.metric_id: point
        for point in MetricHistoryPoint.objects.filter(
            metric__in=configs, recorded_at__gte=now - interval
        ).order_by("recorded_at")
    } if interval and not force else {}
    new_points, changed_points = [], []
    for config in configs:
        point = latest.get(config.pk)
        if point is None:
            new_points.append(MetricHistoryPoint(
                metric=config, value=config.value, keyword_count=config.keyword_count,
                recorded_at=now,
            ))
        else:
            # Within one burst the point follows the latest mean instead of adding rows.
            point.value, point.keyword_count = config.value, config.keyword_count
            changed_points.append(point)
    MetricHistoryPoint.objects.bulk_create(new_points)
    MetricHistoryPoint.objects.bulk_update(changed_points, ["value", "keyword_count"])


def _record_error(evaluation: Evaluation, error: Exception) -> None:
    logger.warning("recompute of evaluation %s failed: %s", evaluation.pk, error)
    Evaluation.objects.filter(pk=evaluation.pk).update(recompute_error=str(error))


def dirty_keywords_due(*, limit: int = 5000) -> list[int]:
    cutoff = timezone.now() - timedelta(seconds=settings.RECOMPUTE_SWEEP_AFTER_SECONDS)
    return list(
        Keyword.objects.filter(dirty_since__lte=cutoff)
        .order_by("dirty_since").values_list("pk", flat=True)[:limit]
    )


# --- the team baseline the dashboards compare against ---


@transaction.atomic
def team_baseline_set(*, team: Team, evaluation: Evaluation, user: User) -> TeamBaseline:
    """Mark a finished evaluation of the team as its baseline (replacing the previous one)."""
    if evaluation.team_id != team.pk:
        raise ValidationError({"evaluation": "The baseline must be one of the team's evaluations."})
    if evaluation.status != Evaluation.Status.FINISHED:
        raise ValidationError({"evaluation": "Only a finished evaluation can be the baseline."})
    baseline, _ = TeamBaseline.objects.update_or_create(
        team=team, defaults={"evaluation": evaluation, "set_by": user, "set_at": timezone.now()}
    )
    return baseline


@transaction.atomic
def team_baseline_clear(*, team: Team) -> None:
    TeamBaseline.objects.filter(team=team).delete()
