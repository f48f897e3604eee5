"""Regression verdicts: a run (any evaluation) against a baseline evaluation, per metric
and overall, stored as RegressionVerdict.

The math and the words are metrics_engine.verdicts'; this module reads the stored keyword
values of both evaluations (keywords matched by normalized text, metrics by identity:
code, k and the parameters read), the result lists for the identical-ranking guard, and
stores the outcome. Callers: the listener on `finished` (metrics.verdict_receivers → the
task), the gate API (metrics.api_verdicts), `manage.py evaluate --gate`, and for a
schedule's run schedules.verdicts.
"""

import logging
from collections import defaultdict
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import OuterRef, QuerySet, Subquery
from django.urls import reverse

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, Keyword, Snapshot
from evaluations.services.keywords import FieldProblem, tags_clean
from metrics.models import KeywordMetricValue, RegressionVerdict
from metrics.selectors import metric_configs, metric_key, metric_label, team_baseline
from metrics.verdict_rules import own_rule
from metrics_engine import verdicts as core_verdicts
from metrics_engine.verdict_segments import metric_comparisons, segments_not_compared
from metrics_engine.verdicts import MetricVerdict, RegressionOutcome, VerdictRule
from notifications.models import Event
from notifications.services import notify
from searchtweak.models import User

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VerdictComputation:
    outcome: RegressionOutcome
    configs: list[EvaluationMetric]
    """The run's configuration of each compared metric, in `outcome.metrics` order."""

    @property
    def verdict(self) -> str:
        return str(self.outcome.verdict)

    def metric_details(self) -> list[dict]:
        """Per metric, the comparison over every keyword (its verdict and reason those of
        the metric: see MetricVerdict.comparisons), the worst keywords, and under
        `segments` each comparison the rule asked for (empty when it asked for none)."""
        rows = []
        for config, result in zip(self.configs, self.outcome.metrics, strict=True):
            rows.append({
                "label": result.measure.label, "code": config.code, "k": config.k,
                "params": config.params, **_comparison_details(result),
                "verdict": str(result.verdict), "reason": result.reason,
                "worst": [{"keyword": key, "delta": delta}
                          for key, delta in result.measure.extremes(worst=True)],
                "segments": [{"segment": c.measure.segment or None,
                              "weighted": c.measure.weighted, **_comparison_details(c)}
                             for c in result.comparisons],
            })
        return rows


def _comparison_details(result: MetricVerdict) -> dict:
    measure = result.measure
    return {
        "verdict": str(result.verdict), "mean_delta": measure.mean_delta,
        "ci_low": measure.ci[0] if measure.ci else None,
        "ci_high": measure.ci[1] if measure.ci else None,
        "p": measure.p, "p_adjusted": result.p_adjusted,
        "coverage": measure.coverage, "covered_count": measure.covered_count,
        "shared_count": measure.shared_count, "run_keyword_count": measure.run_keyword_count,
        "reason": result.reason, "decided_by": str(result.decided_by),
        "delta_range": list(measure.delta_range) if measure.delta_range else None,
    }


def verdict_segments_clean(segments: list[str]) -> tuple[str, ...]:
    """The segments a rule names, as tags are stored (lower-cased, whitespace made one
    space: evaluations.services.keywords.tags_clean), in the given order, each once; a
    ValidationError on `segments` naming the item for an empty or too long one, or too
    many."""
    cleaned: list[str] = []
    for index, segment in enumerate(segments):
        if not isinstance(segment, str):
            raise ValidationError({"segments": f"item {index}: a tag is text."})
        try:
            tag = tags_clean([segment])
        except FieldProblem as problem:
            raise ValidationError({"segments": f"item {index}: {problem.problem}"}) from None
        if not tag:
            raise ValidationError({"segments": f"item {index}: a tag, not an empty text."})
        if tag[0] not in cleaned:
            cleaned.append(tag[0])
    if len(cleaned) > core_verdicts.MAX_SEGMENTS:
        raise ValidationError({"segments": f"{len(cleaned)} segments; a rule names at most "
                                           f"{core_verdicts.MAX_SEGMENTS}."})
    return tuple(cleaned)


def verdict_baseline_check(*, evaluation: Evaluation, baseline: Evaluation | None) -> Evaluation:
    """The baseline a run may be judged against, or a ValidationError on `baseline`."""
    if baseline is None:
        raise ValidationError({"baseline": "No baseline: name one, or set the team's baseline."})
    if baseline.team_id != evaluation.team_id:
        # Said like a missing one: another team's evaluation does not exist for the caller.
        raise ValidationError({"baseline": f"No evaluation {baseline.pk} in this team."})
    if baseline.pk == evaluation.pk:
        raise ValidationError({"baseline": "An evaluation cannot be its own baseline."})
    if baseline.scale != evaluation.scale:
        raise ValidationError({"baseline": (
            f"The baseline '{baseline.name}' is graded on the {baseline.scale} scale, the run "
            f"on {evaluation.scale}: their values cannot be compared.")})
    return baseline


def baseline_of_team(*, evaluation: Evaluation, baseline_id: int | None) -> Evaluation | None:
    """The named baseline of the evaluation's team, or the team's baseline when None;
    a ValidationError on `baseline` for an id that is not one of the team's evaluations."""
    if baseline_id is None:
        return team_baseline(team_id=evaluation.team_id)
    baseline = Evaluation.objects.filter(pk=baseline_id, team_id=evaluation.team_id).first()
    if baseline is None:
        raise ValidationError({"baseline": f"No evaluation {baseline_id} in this team."})
    return baseline


def gate_baseline_and_rule(*, evaluation: Evaluation, baseline_id: int | None,
                           rule_fields: dict) -> tuple[Evaluation | None, VerdictRule]:
    """What a gate judges the evaluation against, and by which rule: the named baseline;
    else, for an evaluation with a rule of its own (a schedule's run: metrics.verdict_rules),
    the baseline that rule chose (a ValidationError on `baseline` saying why when there is
    none yet) with that rule's coverage, threshold, segments and weighting as the defaults;
    else the team's baseline. `rule_fields` (a VerdictRule's fields the caller gave; None:
    not given) override the defaults; the segments as verdict_segments_clean cleans them."""
    own = own_rule(evaluation)
    defaults = VerdictRule()
    if own is not None:
        defaults = own.rule
    if baseline_id is None and own is not None:
        baseline, missing = own.baseline()
        if baseline is None:
            raise ValidationError({"baseline": f"{missing} Name a baseline."})
    else:
        baseline = baseline_of_team(evaluation=evaluation, baseline_id=baseline_id)
    given = {name: value for name, value in rule_fields.items() if value is not None}
    if "segments" in given:
        given["segments"] = verdict_segments_clean(given["segments"])
    return baseline, VerdictRule(**{**defaults.as_dict(), **given})


def _wanted_metrics(names: list[str] | None) -> list[tuple[str, int | None]] | None:
    if not names:
        return None
    wanted = []
    for name in names:
        try:
            wanted.append(core.resolve_metric_name(name, "metrics"))
        except core.MetricInputError as error:
            raise ValidationError({"metrics": str(error)}) from None
    return wanted


def regression_verdict_compute(
    *, evaluation: Evaluation, baseline: Evaluation, rule: VerdictRule,
    metrics: list[str] | None = None,
) -> VerdictComputation:
    """The run against the baseline from the stored keyword values (a read: nothing is
    saved). `metrics` limits the compared metrics to these names (``ndcg@10``, ``p``; a
    name without k takes every k); one that is not configured in both → ValidationError."""
    verdict_baseline_check(evaluation=evaluation, baseline=baseline)
    wanted = _wanted_metrics(metrics)
    run_configs, base_configs = metric_configs(evaluation.pk), metric_configs(baseline.pk)
    base_by_key = {metric_key(c): c for c in base_configs}
    run_keys = {metric_key(c) for c in run_configs}
    pairs = [(c, base_by_key[metric_key(c)]) for c in run_configs if metric_key(c) in base_by_key]
    notes = [f"{metric_label(c)} is configured in the run only: not compared."
             for c in run_configs if metric_key(c) not in base_by_key]
    notes += [f"{metric_label(c)} is configured in the baseline only: not compared."
              for c in base_configs if metric_key(c) not in run_keys]
    if wanted is not None:
        for code, k in wanted:
            if not any(c.code == code and (k is None or c.k == k) for c, _ in pairs):
                label = code if k is None else core.metric_code_at_k(code, k)
                raise ValidationError({"metrics": f"{label} is not configured in both the run "
                                                  "and the baseline."})
        pairs = [(c, b) for c, b in pairs
                 if any(c.code == code and (k is None or c.k == k) for code, k in wanted)]
        notes = []

    run_keywords = list(Keyword.objects.filter(evaluation=evaluation).order_by("position")
                        .values_list("pk", "normalized_text", "text", "fetch_status",
                                     "weight", "tags"))
    # The rule's segments and weights are the run's keywords' (paired with the baseline's
    # by text, as their values are).
    tags = {normalized: tuple(keyword_tags or ()) for _, normalized, *_, keyword_tags
            in run_keywords}
    weights = {normalized: weight for _, normalized, *_, weight, _ in run_keywords}
    base_keywords = dict(Keyword.objects.filter(evaluation=baseline)
                         .values_list("normalized_text", "pk"))
    stored: dict[tuple[int, int], tuple[float | None, core.KeywordBounds]] = {
        (keyword_id, metric_id): (value, core.KeywordBounds(lower, upper, exact))
        for keyword_id, metric_id, value, lower, upper, exact in
        KeywordMetricValue.objects.filter(
            metric_id__in=[c.pk for pair in pairs for c in pair]
        ).values_list("keyword_id", "metric_id", "value", "lower", "upper", "bounds_exact")
    }
    names = {normalized: text for _, normalized, text, *_ in run_keywords}
    measures = []
    for run_config, base_config in pairs:
        run_side = {normalized: stored.get((pk, run_config.pk))
                    for pk, normalized, *_ in run_keywords}
        base_side = {normalized: stored.get((pk, base_config.pk))
                     for normalized, pk in base_keywords.items()}
        measures.append(metric_comparisons(
            metric_label(run_config),
            {key: row[0] if row else None for key, row in base_side.items()},
            {key: row[0] if row else None for key, row in run_side.items()},
            rule=rule, tags=tags, weights=weights,
            baseline_bounds={key: row[1] for key, row in base_side.items() if row},
            run_bounds={key: row[1] for key, row in run_side.items() if row}))
    notes += segments_not_compared(rule, tags)

    failed = sum(1 for *_, status, _, _ in run_keywords
                 if status == Keyword.FetchStatus.FAILED)
    if failed:
        every = " (every keyword)" if failed == len(run_keywords) else ""
        notes.insert(0, f"{failed} of {len(run_keywords)} keywords of the run failed to "
                        f"fetch{every}: they have no value.")
    identical = _identical_rankings(
        run_keywords=run_keywords, base_keywords=base_keywords,
        depth=max((c.k for c, _ in pairs), default=10))
    if identical:
        notes.append("The rankings are identical (RBO 1) on every shared keyword.")
    outcome = core_verdicts.verdicts_decide(measures, rule, identical_rankings=identical,
                                            names=names, notes=notes)
    return VerdictComputation(outcome=outcome, configs=[c for c, _ in pairs])


def _identical_rankings(*, run_keywords: list[tuple], base_keywords: dict[str, int],
                        depth: int) -> bool:
    """Every keyword the two share returned the same documents in the same order to
    `depth` (RBO 1 at that depth); False when they share none."""
    shared = [(pk, base_keywords[normalized]) for pk, normalized, *_ in run_keywords
              if normalized in base_keywords]
    if not shared:
        return False
    doc_ids: dict[int, list[str]] = defaultdict(list)
    for keyword_id, doc_id in Snapshot.objects.filter(
            keyword_id__in=[pk for pair in shared for pk in pair], position__lte=depth,
    ).order_by("keyword_id", "position").values_list("keyword_id", "doc_id"):
        doc_ids[keyword_id].append(doc_id)
    return all(doc_ids[run_pk] == doc_ids[base_pk] for run_pk, base_pk in shared)


def regression_verdict_create(
    *, evaluation: Evaluation, baseline: Evaluation | None, rule: VerdictRule,
    source: str, user: User | None = None, metrics: list[str] | None = None,
) -> RegressionVerdict:
    """Compute the run's verdict against the baseline and store it (a ValidationError on
    `baseline` or `metrics` saves nothing). Not one transaction on purpose: the reads and
    the resampling take a while on a large evaluation, and the one row is written alone."""
    baseline = verdict_baseline_check(evaluation=evaluation, baseline=baseline)
    computation = regression_verdict_compute(evaluation=evaluation, baseline=baseline,
                                             rule=rule, metrics=metrics)
    return RegressionVerdict.objects.create(
        evaluation=evaluation, baseline=baseline, baseline_name=baseline.name[:200],
        verdict=computation.verdict, reasons=computation.outcome.reasons,
        metrics=computation.metric_details(),
        rule={**rule.as_dict(), "metrics": list(metrics or [])},
        source=source, created_by=user,
    )


def regression_verdict_on_finish(*, evaluation_id: int) -> RegressionVerdict | None:
    """The verdict of a finished evaluation against its team's baseline, stored; None when
    there is nothing to judge it against (no baseline, the baseline itself, a baseline not
    finished or on another scale), and None for an evaluation with a rule of its own
    (metrics.verdict_rules): that rule's owner stores its verdict (a schedule's run:
    schedules.verdicts)."""
    evaluation = Evaluation.objects.filter(pk=evaluation_id).first()
    if evaluation is None or evaluation.status != Evaluation.Status.FINISHED:
        return None
    if own_rule(evaluation) is not None:
        return None
    baseline = team_baseline(team_id=evaluation.team_id)
    if (baseline is None or baseline.pk == evaluation.pk
            or baseline.status != Evaluation.Status.FINISHED
            or baseline.scale != evaluation.scale):
        return None
    verdict = regression_verdict_create(evaluation=evaluation, baseline=baseline,
                                        rule=VerdictRule(),
                                        source=RegressionVerdict.Source.FINISHED)
    regression_verdict_announce(verdict, evaluation=evaluation)
    return verdict


# A run's verdict, as the notification it makes; no change is nobody's news.
_VERDICT_EVENTS = {
    RegressionVerdict.Verdict.REGRESSED: Event.RUN_REGRESSED,
    RegressionVerdict.Verdict.IMPROVED: Event.RUN_IMPROVED,
    RegressionVerdict.Verdict.UNDECIDED: Event.RUN_UNDECIDED,
}


def regression_verdict_announce(verdict: RegressionVerdict, *, evaluation: Evaluation) -> None:
    event = _VERDICT_EVENTS.get(verdict.verdict)
    if event is None:
        return
    # The headline and the first metric's reason ("nDCG@10 fell 0.031 (…); worst: …").
    headline = " ".join(verdict.reasons[:2]) or verdict.get_verdict_display()
    notify(team_id=evaluation.team_id, event=event,
           text=f"“{evaluation.name}” against “{verdict.baseline_name}”: {headline}",
           url=reverse("metrics:evaluation_dashboard", args=[evaluation.pk]),
           payload={"evaluation_id": evaluation.pk, "baseline_id": verdict.baseline_id,
                    "verdict": verdict.verdict, "reasons": verdict.reasons})


def gate_passed(verdict: str, *, undecided_passes: bool) -> bool:
    """The gate's one rule: only *regressed* fails, and *undecided* when told so."""
    if verdict == RegressionVerdict.Verdict.REGRESSED:
        return False
    if verdict == RegressionVerdict.Verdict.UNDECIDED:
        return undecided_passes
    return True


# --- reads ---------------------------------------------------------------------------------


def regression_verdicts(*, evaluation: Evaluation) -> QuerySet[RegressionVerdict]:
    """The evaluation's verdicts, newest first."""
    return (RegressionVerdict.objects.filter(evaluation=evaluation)
            .order_by("-created_at", "-id"))


def standing_regression_verdict(*, evaluation: Evaluation) -> RegressionVerdict | None:
    """The newest verdict of the rule that stands for the evaluation (the schedule's for a
    schedule's run, else the team's: RegressionVerdict.STANDING_SOURCES); a gate call or
    the command never replaces it."""
    return regression_verdicts(evaluation=evaluation).filter(
        source__in=RegressionVerdict.STANDING_SOURCES).first()


AD_HOC_SHOWN = 5


def ad_hoc_regression_verdicts(*, evaluation: Evaluation) -> list[RegressionVerdict]:
    """The newest verdicts of ad-hoc rules (gate calls, the command), each to be shown with
    the rule that produced it; at most AD_HOC_SHOWN, the API lists them all."""
    return list(regression_verdicts(evaluation=evaluation).exclude(
        source__in=RegressionVerdict.STANDING_SOURCES)[:AD_HOC_SHOWN])


def model_regressed_evaluation_ids(*, model_id: int) -> set[int]:
    """The search model's evaluations whose standing verdict (see
    standing_regression_verdict) is *regressed*, in one query."""
    latest = (RegressionVerdict.objects.filter(evaluation_id=OuterRef("evaluation_id"),
                                               source__in=RegressionVerdict.STANDING_SOURCES)
              .order_by("-created_at", "-id").values("verdict")[:1])
    return set(RegressionVerdict.objects.filter(evaluation__model_id=model_id)
               .annotate(latest=Subquery(latest))
               .filter(latest=RegressionVerdict.Verdict.REGRESSED)
               .values_list("evaluation_id", flat=True).distinct())
