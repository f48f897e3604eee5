"""Hard budgets of judge runs: a run's own (JudgeRun.budget) and its team's per calendar
month (JudgeTrustPolicy.monthly_budget, in its monthly_budget_currency), both at the
judges' prices. The month is counted per currency; a judge priced in another currency
than the team's cap makes no paid call while the cap is set (no exchange rate is known).

The one rule, `call_reserve`: before each call, the spend so far plus the call's expected
cost (judges.token_counts.call_cost) must stay within both caps. It is checked and counted in
one transaction holding the run's row and the team's month row (in that order), so
concurrent lanes cannot both pass on the same remaining money. When the call would go
over, it is not made: the run pauses with the reason. When the call returns, `call_settle`
replaces the expectation with the cost of the tokens it recorded. A worker that dies in
between leaves its expectation counted (the safe side).

A judge without prices costs nothing here: its calls are neither capped nor counted.
"""

from __future__ import annotations

import logging
import re
from datetime import date
from decimal import Decimal

from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from judges.models import JudgeRun, JudgeTeamSpend, JudgeTrustPolicy
from notifications.models import Event
from notifications.services import notify

logger = logging.getLogger(__name__)


def month_of(day: date) -> date:
    return day.replace(day=1)


CURRENCY_PROBLEM = "Three letters, a currency code such as USD or EUR."


def currency_code(value: object) -> str | None:
    """An ISO 4217-shaped code, upper case, from what was typed; None when it is not one."""
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z]{3}", value.strip()):
        return value.strip().upper()
    return None


# Money is counted to four decimals (JudgeRun.budget, .spend, JudgeTeamSpend.spend).
MONEY_PLACES = 4


def money(amount: Decimal, currency: str) -> str:
    """`amount currency` with the digits the amount needs: two decimals, more (up to the
    four it is counted to) when they are not zero, so a budget of 0.002 reads "0.002 USD",
    never "0.00 USD", and 5 reads "5.00 USD"."""
    counted = Decimal(amount).quantize(Decimal(1).scaleb(-MONEY_PLACES))
    places = min(MONEY_PLACES, max(2, -counted.normalize().as_tuple().exponent))
    return f"{counted:.{places}f} {currency}".strip()


@transaction.atomic
def call_reserve(*, run_id: int, cost: Decimal) -> str:
    """Count `cost` against the run's and its team's budgets; "" when the call may go,
    else the reason, with which the run (if still running) was paused."""
    run = JudgeRun.objects.select_for_update(of=("self",)).select_related(
        "judge", "evaluation").get(pk=run_id)
    if run.status != JudgeRun.Status.RUNNING:
        return f"the run is {run.status}"
    currency, team_id = run.judge.price_currency, run.judge.team_id
    month_on = month_of(timezone.localdate())
    JudgeTeamSpend.objects.get_or_create(team_id=team_id, month_on=month_on,
                                         currency=currency)
    month = JudgeTeamSpend.objects.select_for_update().get(
        team_id=team_id, month_on=month_on, currency=currency)
    team_budget, budget_currency = JudgeTrustPolicy.objects.filter(team_id=team_id).values_list(
        "monthly_budget", "monthly_budget_currency").first() or (None, "")
    reason = ""
    if run.budget is not None and run.spend + cost > run.budget:
        reason = (f"Paused: the next call would take this run to "
                  f"{money(run.spend + cost, currency)}, over its budget of "
                  f"{money(run.budget, currency)}.")
    elif team_budget is not None and cost and currency != budget_currency:
        # No exchange rate is known: counting EUR against a USD cap would be a guess, and
        # not counting it would let this judge spend past the cap.
        reason = (f"Paused: the judge is priced in {currency} and the team's monthly budget "
                  f"is in {budget_currency}, so its calls cannot be counted against it. "
                  f"Price the judge in {budget_currency}, or change the budget's currency.")
    elif team_budget is not None and month.spend + cost > team_budget:
        reason = (f"Paused: the next call would take the team's judge spend for "
                  f"{month_on:%B %Y} to {money(month.spend + cost, currency)}, over its "
                  f"monthly budget of {money(team_budget, currency)}.")
    if reason:
        run.status, run.pause_reason = JudgeRun.Status.PAUSED, reason
        run.save(update_fields=["status", "pause_reason"])
        logger.info("judge run %s: %s", run_id, reason)
        # Someone has to raise the budget or resume: a paused run waits for nobody.
        notify(team_id=team_id, event=Event.JUDGE_RUN_PAUSED,
               text=f"Judge run of “{run.judge.name}” on “{run.evaluation.name}”: {reason}",
               url=reverse("judges:run_detail", args=[run.pk]),
               payload={"judge_run": run.pk, "evaluation": run.evaluation_id})
        return reason
    run.spend += cost
    run.save(update_fields=["spend"])
    month.spend += cost
    month.save(update_fields=["spend"])
    return ""


@transaction.atomic
def call_settle(*, run_id: int, reserved: Decimal, cost: Decimal) -> None:
    """The call returned costing `cost` (its recorded tokens at the prices) where
    `reserved` was counted; the month is the reservation's, taken as the current one."""
    change = cost - reserved
    if not change:
        return
    run = JudgeRun.objects.select_related("judge").only(
        "judge__team_id", "judge__price_currency").get(pk=run_id)
    JudgeRun.objects.filter(pk=run_id).update(spend=F("spend") + change)
    JudgeTeamSpend.objects.filter(team_id=run.judge.team_id,
                                  month_on=month_of(timezone.localdate()),
                                  currency=run.judge.price_currency).update(
        spend=F("spend") + change)
