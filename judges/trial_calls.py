"""The Test action: ask a judge once about sample pairs with its saved settings and show
everything that happened (request with the key redacted, raw answer, the verdict on every
pair). Logged as a test call; no grade is stored."""

import copy
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from judges import calls
from judges.core.answers import Accepted, Rejected
from judges.core.prompts import Document, PromptError, check_documents
from judges.models import Judge
from judges.run_selectors import token_cost
from judges.services import json_problem
from judgments import scales as scale_lookup
from searchtweak import outbound, outbound_limits

# The Test asks once, while the page waits: a handful of documents is enough.
MAX_TEST_DOCUMENTS = 5


@dataclass(frozen=True)
class TestOutcome:
    """What a Test shows: the request as sent (key redacted), the raw answer, every pair
    accepted or rejected, or the error of a call that gave no answer."""

    request: dict[str, Any] = field(default_factory=dict)
    prompt: str = ""
    """The user prompt as the model reads it (the request's body holds it JSON-escaped)."""
    answer: str = ""
    accepted: tuple[Accepted, ...] = ()
    rejected: tuple[Rejected, ...] = ()
    error: str = ""
    latency_ms: int | None = None
    """How long the call took (None when nothing was sent)."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: Decimal | None = None
    currency: str = ""


def judge_test_sample(*, judge: Judge, keyword: str, scale_code: str,
                      documents: list[Document], guidelines: str = "") -> TestOutcome:
    """One attempt (no retries), its timeout within the web request's deadline: the page
    waits for it. Bad input raises ValidationError naming the field; the model's or the
    network's failure is the outcome's ``error``."""
    problems = {}
    if not keyword.strip() or len(keyword) > 500:
        problems["keyword"] = "Enter a keyword (at most 500 characters)."
    team_scale = scale_lookup.scale_for_team(team_id=judge.team_id, code=scale_code)
    if team_scale is None:
        problems["scale"] = f"The team has no scale {scale_code!r}."
    if not 1 <= len(documents) <= MAX_TEST_DOCUMENTS:
        problems["documents"] = f"Give 1 to {MAX_TEST_DOCUMENTS} documents."
    else:
        try:
            check_documents(documents)
        except PromptError as error:
            problems["documents"] = str(error)
        if any(json_problem(dict(document.fields)) for document in documents):
            problems["documents"] = "a field holds a value JSON cannot carry"
    if problems:
        raise ValidationError(problems)
    once = copy.copy(judge)  # never saved: this call's own limits
    once.max_retries = 0
    once.timeout_seconds = min(judge.timeout_seconds, settings.OUTBOUND_TEST_DEADLINE_SECONDS)
    with outbound_limits.team_test_turn(team_id=judge.team_id), \
            outbound.deadline(settings.OUTBOUND_TEST_DEADLINE_SECONDS) as deadline_at:
        result = calls.ask(judge=once, keyword=keyword.strip(), guidelines=guidelines,
                           scale=team_scale.scale, documents=documents, is_test=True,
                           deadline_at=deadline_at)
    if result.error_kind == "api_key":
        raise ValidationError({"api_key": result.error})
    verdict = result.verdict
    return TestOutcome(request=result.request, answer=result.answer_text,
                       prompt=result.prompt.user if result.prompt else "",
                       accepted=verdict.accepted if verdict else (),
                       rejected=verdict.rejected if verdict else (), error=result.error,
                       latency_ms=result.calls[-1].latency_ms if result.calls else None,
                       tokens_in=result.tokens_in, tokens_out=result.tokens_out,
                       cost=token_cost(judge=judge, tokens_in=result.tokens_in,
                                       tokens_out=result.tokens_out),
                       currency=judge.price_currency)
