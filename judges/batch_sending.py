"""Sending a judge run's batch: its one call (on a lane's thread, or the lane's own),
reserved against the budgets as it leaves and its cost settled, and the answer read into
the batch's outcomes; a batch that broke fails its pairs with the reason.
"""

from __future__ import annotations

import logging
from decimal import Decimal

import httpx

from judges import budgets, calls, token_counts
from judges.batch_claiming import Batch, Outcome, unclaim
from judges.batch_storing import crashed
from judges.core.prompts import Document, PromptError, build_prompt
from judges.models import JudgeRun, JudgeRunItem
from judges.run_selectors import token_cost

logger = logging.getLogger(__name__)


def ask(*, run: JudgeRun, batch: Batch, client: httpx.Client | None) -> None:
    """The batch's one call (on a lane's thread, or the lane's own), reserved against the
    budgets as it leaves and its cost settled; what raised is kept for the lane, which
    fails the batch's pairs with it. Reserved here, not when claimed: a lane claims a
    round ahead, and reservations for calls not yet made would pause a run that the
    money left still pays for (and stay counted when the pause gives those batches back)."""
    judge = run.judge
    try:
        reserved = _budget_reserve(
            run=run, template=calls.template_for(judge, batch.scale), keyword=batch.keyword,
            scale=batch.scale, documents=[batch.documents[i.pk] for i in batch.asking])
        if reserved is None:
            batch.over_budget = True
            return
        batch.reserved = reserved
        batch.result = calls.ask(
            judge=judge, keyword=batch.keyword, guidelines=run.evaluation.guidelines,
            scale=batch.scale, documents=[batch.documents[i.pk] for i in batch.asking],
            run=run, client=client)
        if batch.reserved:
            budgets.call_settle(run_id=run.pk, reserved=batch.reserved, cost=token_cost(
                judge=judge, tokens_in=batch.result.tokens_in,
                tokens_out=batch.result.tokens_out))
    except Exception as error:
        batch.error = error


def concluded(run: JudgeRun, batch: Batch) -> Batch:
    """The batch's answer read into its outcomes. Whatever broke, its pairs end failed
    with the reason and the run counts the crash: a lane that let it escape would leave
    them claimed, to be asked (and paid for) again by every lane the sweep starts."""
    try:
        if batch.error is not None:
            raise batch.error
        result = batch.result
        if batch.over_budget or (result is not None and result.error_kind == "no_turn"):
            # Not asked (over a budget, which paused the run; or no turn in time): the
            # pairs wait for another lane.
            unclaim(run=run, items=batch.asking)
            batch.items = [item for item in batch.items
                           if batch.outcomes[item.pk].from_cache]
        elif result is not None:
            _read_verdict(result, batch.asking, batch.documents, batch.outcomes)
    except Exception as error:
        logger.exception("a batch of judge run %s crashed", run.pk)
        crashed(run=run, items=batch.items, error=error)
        batch.items, batch.error = [], error
    return batch


def _budget_reserve(*, run: JudgeRun, template: str, keyword: str, scale,
                    documents: list[Document]) -> Decimal | None:
    """The expected cost of the call about `documents`, counted against the budgets
    (judges.budgets); None when it would go over them (the run paused). A judge without
    prices reserves nothing."""
    judge = run.judge
    if judge.price_in_per_million is None and judge.price_out_per_million is None:
        return Decimal(0)
    try:
        prompt = build_prompt(template, keyword=keyword, guidelines=run.evaluation.guidelines,
                              documents=documents, scale=scale)
    except PromptError:
        return Decimal(0)  # the call fails before it is sent (calls.ask says why)
    cost = token_counts.call_cost(judge=judge, prompt=prompt, pair_count=len(documents),
                                  tokens_out=token_counts.tokens_out_expected(judge=judge))
    if budgets.call_reserve(run_id=run.pk, cost=cost):
        return None
    return cost


def _read_verdict(result: calls.AskResult, asking: list[JudgeRunItem],
                  documents: dict[int, Document], outcomes: dict[int, Outcome]) -> None:
    if result.verdict is None:
        for item in asking:
            outcomes[item.pk].failure = result.error_kind
            outcomes[item.pk].detail = result.error
        return
    accepted = {answer.id: answer for answer in result.verdict.accepted}
    rejected = {answer.id: answer for answer in result.verdict.rejected}
    for item in asking:
        doc_id, outcome = documents[item.pk].id, outcomes[item.pk]
        if doc_id in accepted:
            outcome.grade, outcome.reason = accepted[doc_id].grade, accepted[doc_id].reason
        else:
            outcome.failure = str(rejected[doc_id].code)
            outcome.detail = rejected[doc_id].detail
