"""Reads for the judges' run pages and API: an evaluation's runs, one run with its failed
items, and a judge's call log with its token totals.

Who may see them: the team's leads and up (RUNS_ROLE), as for starting a run; a grader
gets a 403, anyone outside the team a 404 (searchtweak.access). The call log shows the
redacted requests (prompts, documents, model parameters), never a key.
"""

from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal

from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from evaluations.models import Evaluation
from evaluations.selectors import evaluation_get_for_user
from judges.models import Judge, JudgeCall, JudgeRun, JudgeRunItem
from searchtweak import access
from searchtweak.models import Role, User

# Starting, watching and acting on runs, and reading the call logs.
RUNS_ROLE = Role.LEAD
CALLS_PER_PAGE = 50
# What JudgeCall.status holds (judges.models): "ok" or what went wrong.
CALL_STATUSES = ("ok", "http_error", "rate_limited", "timeout", "unreachable", "malformed",
                 "refused", "in_flight")
MILLION = Decimal(1_000_000)


# --- access ------------------------------------------------------------------------------


def evaluation_for_runs(*, user: User, evaluation_id: int,
                        minimum_role: str = RUNS_ROLE) -> Evaluation:
    return evaluation_get_for_user(user=user, evaluation_id=evaluation_id,
                                   minimum_role=minimum_role)


def run_get_for_user(*, user: User, run_id: int, minimum_role: str = RUNS_ROLE) -> JudgeRun:
    return access.row_get_for_user(
        JudgeRun.objects.select_related("judge", "evaluation", "started_by"), user=user,
        pk=run_id, minimum_role=minimum_role, what="run",
        team_id_of=lambda run: run.evaluation.team_id)


def call_get_for_user(*, user: User, call_id: int) -> JudgeCall:
    return access.row_get_for_user(
        JudgeCall.objects.select_related("judge", "run"), user=user, pk=call_id,
        minimum_role=RUNS_ROLE, what="call", team_id_of=lambda call: call.judge.team_id)


# --- runs --------------------------------------------------------------------------------


def runs_of_evaluation(*, evaluation: Evaluation) -> QuerySet[JudgeRun]:
    """Newest first, with what the runs table shows."""
    return JudgeRun.objects.filter(evaluation=evaluation).select_related("judge", "started_by")


def judges_for_start(*, team_id: int) -> QuerySet[Judge]:
    """The judges a lead may pick to start a run: the team's active ones, with what a
    clicks grader learns from (the picker names it)."""
    return (Judge.objects.filter(team_id=team_id, is_active=True)
            .select_related("click_grader__source").order_by("name", "id"))


def runs_of_judge(*, judge: Judge) -> QuerySet[JudgeRun]:
    return JudgeRun.objects.filter(judge=judge).select_related("evaluation")


@dataclass(frozen=True)
class FailedItem:
    item_id: int
    keyword: str
    doc_id: str
    failure: str
    detail: str
    call_id: int | None


def failed_items_of_run(*, run: JudgeRun, limit: int | None = None) -> list[FailedItem]:
    """The run's failed pairs in keyword and result order (the first ``limit``), one
    query."""
    rows = JudgeRunItem.objects.filter(run=run, status=JudgeRunItem.Status.FAILED).order_by(
        "keyword__position", "snapshot__position", "id").values_list(
        "id", "keyword__text", "snapshot__doc_id", "failure", "failure_detail", "call_id")
    return [FailedItem(*row) for row in (rows if limit is None else rows[:limit])]


# --- calls -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallFilters:
    """What the call log is narrowed to; every field optional. Dates are inclusive days in
    the current time zone."""

    run_id: int | None = None
    status: str = ""
    is_test: bool | None = None
    started_from: date | None = None
    started_to: date | None = None


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def calls_of_judge(*, judge: Judge, filters: CallFilters = CallFilters()) -> QuerySet[JudgeCall]:
    """Newest first (the model's ordering), narrowed by `filters`."""
    calls = JudgeCall.objects.filter(judge=judge)
    if filters.run_id is not None:
        calls = calls.filter(run_id=filters.run_id)
    if filters.status:
        calls = calls.filter(status=filters.status)
    if filters.is_test is not None:
        calls = calls.filter(is_test=filters.is_test)
    if filters.started_from is not None:
        calls = calls.filter(started_at__gte=_day_start(filters.started_from))
    if filters.started_to is not None:
        calls = calls.filter(
            started_at__lt=_day_start(filters.started_to) + timezone.timedelta(days=1))
    return calls.order_by("-started_at", "-id")


def token_cost(*, judge: Judge, tokens_in: int, tokens_out: int) -> Decimal | None:
    """The estimated cost at the judge's prices per million tokens; None when it has none
    (a price left empty counts as free when the other one is set)."""
    if judge.price_in_per_million is None and judge.price_out_per_million is None:
        return None
    price_in = judge.price_in_per_million or Decimal(0)
    price_out = judge.price_out_per_million or Decimal(0)
    cost = (Decimal(tokens_in) * price_in + Decimal(tokens_out) * price_out) / MILLION
    return cost.quantize(Decimal("0.0001"))


@dataclass(frozen=True)
class TokenTotals:
    call_count: int
    tokens_in: int
    tokens_out: int
    cost: Decimal | None


def token_totals_of_judge(*, judge: Judge) -> TokenTotals:
    """Every call the judge made (runs and tests), summed in one query."""
    totals = JudgeCall.objects.filter(judge=judge).aggregate(
        call_count=Count("id"), tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"))
    tokens_in, tokens_out = totals["tokens_in"] or 0, totals["tokens_out"] or 0
    return TokenTotals(call_count=totals["call_count"], tokens_in=tokens_in,
                       tokens_out=tokens_out,
                       cost=token_cost(judge=judge, tokens_in=tokens_in, tokens_out=tokens_out))
