"""How many tokens a judge's call carries and answers with, and what that costs: one way
of counting for the run estimate (judges.estimates) and the budget guard's figure for a
call about to be made (judges.batch_sending, judges.budgets).

Tokens in are counted on the rendered prompt at CHARS_PER_TOKEN (no tokenizer is
installed; for English and JSON the common models average 3.5 to 4.5 characters a token).
Tokens out, in this order: the judge's own history (its answered calls' tokens out per
pair), else its max_tokens parameter per call (an upper bound), else a guess of
GUESS_TOKENS_OUT_PER_PAIR per pair (a grade and a sentence of reason in JSON).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Sum

from judges.core.prompts import JudgePrompt
from judges.models import Judge, JudgeCall
from judges.run_selectors import token_cost

CHARS_PER_TOKEN = 4
GUESS_TOKENS_OUT_PER_PAIR = 60
# The parameters that cap a call's answer, by provider family.
MAX_TOKENS_PARAMETERS = ("max_tokens", "max_completion_tokens", "num_predict")


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_tokens(prompt: JudgePrompt) -> int:
    """The tokens a request carries: system, user prompt and the answer's JSON schema."""
    return text_tokens(prompt.system) + text_tokens(prompt.user) + text_tokens(
        json.dumps(prompt.schema, separators=(",", ":")))


@dataclass(frozen=True)
class TokensOut:
    per_pair: float | None
    per_call: int | None
    source: str  # "history", "max_tokens" or "guess"

    def for_call(self, pair_count: int) -> int:
        if self.per_call is not None:
            return self.per_call
        return math.ceil((self.per_pair or 0) * pair_count)


def tokens_out_expected(*, judge: Judge) -> TokensOut:
    """How many tokens the judge's answers take (see the module's docstring), one query."""
    totals = JudgeCall.objects.filter(
        judge=judge, status="ok", tokens_out__isnull=False, pair_count__gt=0).aggregate(
        tokens=Sum("tokens_out"), pairs=Sum("pair_count"))
    if totals["pairs"]:
        return TokensOut(per_pair=totals["tokens"] / totals["pairs"], per_call=None,
                         source="history")
    parameters = judge.parameters or {}
    options = parameters.get("options") if isinstance(parameters.get("options"), dict) else {}
    for name in MAX_TOKENS_PARAMETERS:
        value = parameters.get(name, options.get(name))
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return TokensOut(per_pair=None, per_call=value, source="max_tokens")
    return TokensOut(per_pair=GUESS_TOKENS_OUT_PER_PAIR, per_call=None, source="guess")


def call_cost(*, judge: Judge, prompt: JudgePrompt, pair_count: int,
              tokens_out: TokensOut) -> Decimal | None:
    """The expected cost of one call with this prompt; None when the judge has no prices."""
    return token_cost(judge=judge, tokens_in=prompt_tokens(prompt),
                      tokens_out=tokens_out.for_call(pair_count))


