"""Whether a judge's grades count: earned with evidence, never assumed.

A judge starts not counting (its runs may only shadow). Its grades may count once a
finished shadow run on an evaluation gives evidence that clears the team's bar
(`JudgeTrustPolicy`: at least `min_pairs` judge x person pairs and a weighted κ of at
least `min_kappa`; quadratic on a longer scale, which on two grades is plain κ). Below
the bar an admin may still let it count, but only with a stated reason, which is kept
beside the judge with who, when and the figures of that moment. A finished shadow run is
needed either way; taking the trust back is always allowed.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from audit.models import Action
from audit.services import audit_object, fields_of
from evaluations.models import Evaluation
from judges import budgets, calibration
from judges.models import Judge, JudgeRun, JudgeTrustPolicy
from searchtweak.models import Team, User

logger = logging.getLogger(__name__)

NO_SHADOW_RUN = ("Run this judge in shadow mode to the end first: its grades count only "
                 "after calibration against the people's.")
MAX_MIN_PAIRS = 100_000
MAX_REASON_CHARS = 2000


def has_done_shadow_run(*, judge: Judge, evaluation: Evaluation | None = None) -> bool:
    runs = JudgeRun.objects.filter(judge=judge, mode=JudgeRun.Mode.SHADOW,
                                   status=JudgeRun.Status.DONE)
    if evaluation is not None:
        runs = runs.filter(evaluation=evaluation)
    return runs.exists()


# --- the team's bar ------------------------------------------------------------------------


def trust_policy(*, team_id: int) -> JudgeTrustPolicy:
    """The team's bar: its saved one, else the defaults (unsaved)."""
    return JudgeTrustPolicy.objects.filter(team_id=team_id).first() or JudgeTrustPolicy(
        team_id=team_id)


@transaction.atomic
def trust_policy_update(*, team: Team, min_pairs: int, min_kappa: float,
                        by: User | None, monthly_budget: Decimal | None = None,
                        monthly_budget_currency: str = "USD") -> JudgeTrustPolicy:
    """ValidationError naming the field for a bar outside its range; nothing is saved then.
    `monthly_budget` caps the team's judge spend a calendar month in
    `monthly_budget_currency` (judges.budgets); None lifts the cap."""
    problems = {}
    if monthly_budget is not None and monthly_budget < 0:
        problems["monthly_budget"] = "A monthly budget is zero or more (or left empty)."
    currency = budgets.currency_code(monthly_budget_currency)
    if currency is None:
        problems["monthly_budget_currency"] = budgets.CURRENCY_PROBLEM
    if isinstance(min_pairs, bool) or not isinstance(min_pairs, int) \
            or not 1 <= min_pairs <= MAX_MIN_PAIRS:
        problems["min_pairs"] = f"Enter a whole number of pairs from 1 to {MAX_MIN_PAIRS}."
    if isinstance(min_kappa, bool) or not isinstance(min_kappa, int | float) \
            or min_kappa != min_kappa or not -1 <= min_kappa <= 1:
        problems["min_kappa"] = "Enter a κ from -1 to 1."
    if problems:
        raise ValidationError(problems)
    policy, _ = JudgeTrustPolicy.objects.select_for_update().get_or_create(team=team)
    before = fields_of(policy, omit=("updated_by",))
    policy.min_pairs, policy.min_kappa = min_pairs, float(min_kappa)
    policy.monthly_budget, policy.monthly_budget_currency = monthly_budget, currency
    policy.updated_by, policy.updated_at = by, timezone.now()
    policy.save(update_fields=["min_pairs", "min_kappa", "monthly_budget",
                               "monthly_budget_currency", "updated_by", "updated_at"])
    audit_object(action=Action.JUDGE_TRUST_POLICY_CHANGED, instance=policy,
                 object_type="judge_trust_policy", actor=by, before=before,
                 after=fields_of(policy, omit=("updated_by",)))
    return policy


# --- the evidence --------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """A judge's figures on one evaluation against the team's bar, and why they fall short
    (`shortfalls` empty: they clear it)."""

    evaluation_id: int | None
    evaluation_name: str
    pair_count: int
    kappa: float | None
    kappa_weighting: str
    exact_match_rate: float | None
    min_pairs: int
    min_kappa: float
    shadow_done: bool = True
    shortfalls: list[str] = field(default_factory=list)

    @property
    def sufficient(self) -> bool:
        return not self.shortfalls

    def as_json(self) -> dict:
        return asdict(self)


def evidence_evaluation(*, judge: Judge) -> Evaluation | None:
    """The evaluation with the judge's newest finished shadow run."""
    return (Evaluation.objects.filter(
        team_id=judge.team_id, judge_runs__judge=judge,
        judge_runs__mode=JudgeRun.Mode.SHADOW, judge_runs__status=JudgeRun.Status.DONE)
        .annotate(last_at=Max("judge_runs__created_at")).order_by("-last_at", "-pk").first())


def counts_evidence(*, judge: Judge, evaluation: Evaluation | None = None,
                    figures: calibration.Calibration | None = None) -> Evidence:
    """The judge's figures on `evaluation` (default: its newest finished shadow run's);
    `figures`: its calibration there, when the caller has it already."""
    policy = trust_policy(team_id=judge.team_id)
    bar = {"min_pairs": policy.min_pairs, "min_kappa": policy.min_kappa}
    evaluation = evaluation or evidence_evaluation(judge=judge)
    if evaluation is None or not has_done_shadow_run(judge=judge, evaluation=evaluation):
        why = NO_SHADOW_RUN if evaluation is None else (
            f"{judge.name} has no finished shadow run on {evaluation.name}: its evidence "
            "comes from an evaluation it shadowed to the end.")
        return Evidence(evaluation_id=evaluation.pk if evaluation else None,
                        evaluation_name=evaluation.name if evaluation else "", pair_count=0,
                        kappa=None, kappa_weighting="", exact_match_rate=None,
                        shadow_done=False, shortfalls=[why], **bar)
    if figures is None or figures.evaluation_id != evaluation.pk:
        figures = calibration.judge_calibration(judge=judge, evaluation=evaluation)
    shortfalls = []
    if figures.pair_count < policy.min_pairs:
        shortfalls.append(
            f"Only {figures.pair_count} pairs of the judge's and the people's grades on "
            f"{evaluation.name}; the team asks for at least {policy.min_pairs}.")
    if figures.kappa is None or figures.kappa < policy.min_kappa:
        shown = "not measurable" if figures.kappa is None else f"{figures.kappa:.3f}"
        shortfalls.append(f"κ on {evaluation.name} is {shown}; the team asks for at least "
                          f"{policy.min_kappa:.2f}.")
    return Evidence(evaluation_id=evaluation.pk, evaluation_name=evaluation.name,
                    pair_count=figures.pair_count, kappa=figures.kappa,
                    kappa_weighting=figures.kappa_weighting,
                    exact_match_rate=figures.exact_match_rate, shortfalls=shortfalls, **bar)


# --- the switch ----------------------------------------------------------------------------


@transaction.atomic
def judge_mark_counts(*, judge: Judge, counts: bool, by: User,
                      evaluation: Evaluation | None = None, override_reason: str = "") -> Judge:
    """Set whether the judge's grades may fill slots. Counting needs a finished shadow
    run on `evaluation` (default: the newest) whose figures clear the team's bar, or,
    below the bar, an `override_reason`. ValidationError on `counts` (no shadow run) or on
    `override_reason` (below the bar, no reason given); nothing changes then."""
    judge = Judge.objects.select_for_update().get(pk=judge.pk)
    reason = (override_reason or "").strip()
    if not counts:
        if judge.counts:
            judge.counts, judge.counts_granted_by, judge.counts_granted_at = False, None, None
            judge.counts_evidence, judge.counts_override_reason = {}, ""
            judge.updated_at = timezone.now()
            judge.save(update_fields=["counts", "counts_granted_by", "counts_granted_at",
                                      "counts_evidence", "counts_override_reason",
                                      "updated_at"])
            audit_object(action=Action.JUDGE_COUNTS_CHANGED, instance=judge,
                         object_type="judge", actor=by, before={"counts": True},
                         after={"counts": False})
            logger.info("judge %s counts=False, set by user %s", judge.pk, by.pk)
        return judge
    evidence = counts_evidence(judge=judge, evaluation=evaluation)
    if not evidence.shadow_done:
        raise ValidationError({"counts": evidence.shortfalls[0]})
    if len(reason) > MAX_REASON_CHARS:
        raise ValidationError({"override_reason": f"At most {MAX_REASON_CHARS} characters."})
    if not evidence.sufficient and not reason:
        raise ValidationError({"override_reason": " ".join(evidence.shortfalls) + (
            " An admin may let it count anyway by giving the reason, which is kept beside "
            "the judge.")})
    judge.counts, judge.counts_granted_by, judge.counts_granted_at = True, by, timezone.now()
    judge.counts_evidence = evidence.as_json()
    judge.counts_override_reason = "" if evidence.sufficient else reason
    judge.updated_at = judge.counts_granted_at
    judge.save(update_fields=["counts", "counts_granted_by", "counts_granted_at",
                              "counts_evidence", "counts_override_reason", "updated_at"])
    audit_object(action=Action.JUDGE_COUNTS_CHANGED, instance=judge, object_type="judge",
                 actor=by, before={"counts": False},
                 after={"counts": True, "counts_override_reason": judge.counts_override_reason,
                        "evaluation": judge.counts_evidence.get("evaluation_id")})
    logger.info("judge %s counts=True, set by user %s%s", judge.pk, by.pk,
                "" if evidence.sufficient else " overriding the team's bar")
    return judge
