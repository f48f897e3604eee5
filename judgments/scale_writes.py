"""Writes of a team's own scales and of the transformers that map grades between scales
(admins). Reads are judgments.scales."""

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

import metrics_engine as core
from audit.models import Action
from audit.services import audit_object, fields_of
from evaluations.models import Evaluation
from evaluations.services.config_checks import MissingTransformerError, metrics_transformers_check
from judgments import scales as scale_lookup
from judgments.models import Scale, Transformer
from searchtweak.models import Team


def _scale_codes_in_use(team: Team, code: str) -> bool:
    return Evaluation.objects.filter(team=team, scale=code).exists()


def _check_scale(*, team: Team, code: str, lo: int, hi: int, labels: dict) -> None:
    if code in core.SCALES:
        raise ValidationError({"code": f"{code!r} is a built-in scale."})
    if "->" in code:
        raise ValidationError({"code": "A scale code may not contain '->'."})
    if lo < 0 or hi > scale_lookup.MAX_GRADE:
        raise ValidationError({"hi": "Grades must lie within 0..10 (one digit key each)."})
    if hi <= lo:
        raise ValidationError({"hi": "The highest grade must be above the lowest."})
    if hi - lo > 9:
        raise ValidationError({"hi": "A scale has at most ten grades (one digit key each)."})
    missing = [g for g in range(lo, hi + 1) if str(g) not in labels]
    if missing:
        raise ValidationError({"labels": f"Grade {missing[0]} has no label."})
    extra = [g for g in labels if not (lo <= int(g) <= hi)]
    if extra:
        raise ValidationError({"labels": f"Grade {extra[0]} is outside {lo}..{hi}."})


@transaction.atomic
def scale_create(
    *, team: Team, code: str, name: str, lo: int, hi: int, labels: dict[str, dict]
) -> Scale:
    _check_scale(team=team, code=code, lo=lo, hi=hi, labels=labels)
    if Scale.objects.filter(team=team, code=code).exists():
        raise ValidationError({"code": f"The team already has a scale {code!r}."})
    scale = Scale.objects.create(team=team, code=code, name=name, lo=lo, hi=hi, labels=labels)
    audit_object(action=Action.SCALE_CREATED, instance=scale, object_type="scale",
                 after=fields_of(scale))
    return scale


@transaction.atomic
def scale_update(*, scale: Scale, name: str, lo: int, hi: int, labels: dict[str, dict]) -> Scale:
    """Names, labels and colours may always change; the range only while no evaluation
    uses the scale (its grades would fall outside)."""
    _check_scale(team=scale.team, code=scale.code, lo=lo, hi=hi, labels=labels)
    if (lo, hi) != (scale.lo, scale.hi) and _scale_codes_in_use(scale.team, scale.code):
        raise ValidationError({"hi": "Evaluations use this scale: its range cannot change."})
    if (lo, hi) != (scale.lo, scale.hi):
        # Their mappings name the old grades; a recompute would read them as they stand.
        naming = Transformer.objects.filter(team=scale.team).filter(
            Q(source=scale.code) | Q(target=scale.code)).first()
        if naming is not None:
            raise ValidationError({"hi": f"The transformer {naming} maps this scale's grades: "
                                   "delete it before changing the range."})
    before = fields_of(scale)
    scale.name, scale.lo, scale.hi, scale.labels = name, lo, hi, labels
    scale.save(update_fields=["name", "lo", "hi", "labels"])
    audit_object(action=Action.SCALE_CHANGED, instance=scale, object_type="scale",
                 before=before, after=fields_of(scale))
    return scale


@transaction.atomic
def scale_delete(*, scale: Scale) -> None:
    if _scale_codes_in_use(scale.team, scale.code):
        raise ValidationError({"code": "Evaluations use this scale: it cannot be deleted."})
    Transformer.objects.filter(team=scale.team).filter(
        Q(source=scale.code) | Q(target=scale.code)).delete()
    audit_object(action=Action.SCALE_DELETED, instance=scale, object_type="scale",
                 before=fields_of(scale))
    scale.delete()


@transaction.atomic
def transformer_save(
    *, team: Team, source: str, target: str, mapping: dict[Any, Any]
) -> Transformer:
    """Create or replace the team's transformer source → target after validating that it
    maps every source grade to a target grade."""
    src = scale_lookup.scale_for_team(team_id=team.pk, code=source)
    dst = scale_lookup.scale_for_team(team_id=team.pk, code=target)
    if src is None:
        raise ValidationError({"source": f"Unknown scale {source!r}."})
    if dst is None:
        raise ValidationError({"target": f"Unknown scale {target!r}."})
    if source == target:
        raise ValidationError({"target": "Choose a scale other than the source."})
    try:
        parsed = core.validate_transformer(mapping, src.core_scale(), dst.core_scale())
    except core.MetricInputError as error:
        raise ValidationError({"mapping": error.problem}) from error
    stored = {str(k): v for k, v in sorted(parsed.items())}
    previous = Transformer.objects.filter(team=team, source=source, target=target).first()
    transformer, _ = Transformer.objects.update_or_create(
        team=team, source=source, target=target,
        defaults={"mapping": stored, "updated_at": timezone.now()},
    )
    audit_object(action=Action.TRANSFORMER_SAVED, instance=transformer,
                 object_type="transformer",
                 before=fields_of(previous) if previous is not None else None,
                 after=fields_of(transformer))
    return transformer


@transaction.atomic
def transformer_delete(*, transformer: Transformer) -> None:
    """Delete a transformer no metric needs: the default (if any) applies again. One that
    an evaluation's metric reads with no default behind it is refused (on `transformer`),
    since every recompute of that evaluation would fail without it."""
    audit_object(action=Action.TRANSFORMER_DELETED, instance=transformer,
                 object_type="transformer", before=fields_of(transformer))
    transformer.delete()
    source = scale_lookup.scale_for_team(team_id=transformer.team_id, code=transformer.source)
    if source is None or source.builtin:
        return  # the built-ins map to each other by default
    evaluations = Evaluation.objects.filter(
        team_id=transformer.team_id, scale=transformer.source).prefetch_related("metric_configs")
    for evaluation in evaluations:
        try:
            metrics_transformers_check(
                team=transformer.team, scale=source.core_scale(),
                metrics=[{"code": m.code, "k": m.k, "params": m.params}
                         for m in evaluation.metric_configs.all()],
                transformers=evaluation.transformers)
        except MissingTransformerError:
            raise ValidationError({"transformer": (
                f"Evaluation “{evaluation.name}” reads grades through {transformer}, and "
                f"{transformer.target} has no default from {source.name}: its metrics "
                "could not be computed without it.")}) from None
