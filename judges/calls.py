"""Asking a judge's model about one batch of documents, and logging every HTTP attempt.

The pure parts (protocols, sending with retries, prompts, validation) are judges.core;
this module binds them to a Judge: its provider and key, its template for the scale, the
outbound policy's client, the shared rate limit (a turn per attempt, shared by all
workers like an endpoint's), and one JudgeCall row per attempt, key redacted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
from django.conf import settings
from django.db.models import F
from django.utils import timezone

from evaluations.crypto import SecretsUnreadable
from judges import images
from judges.core import providers
from judges.core.answers import Rejection, Verdict, validate_answer
from judges.core.prompts import Document, JudgePrompt, PromptError, build_prompt, default_template
from judges.core.redaction import redacted
from judges.core.sending import Attempt, CallResult, RetryPolicy, send
from judges.models import CALLED_PROVIDERS, Judge, JudgeCall, JudgeRun
from judges.secrets import decrypt_api_key
from metrics_engine.scales import Scale
from searchtweak import instruments, outbound, outbound_limits, outbound_sending

# A turn is held for one attempt; this outlasts the longest (connect, then a body that
# trickles until twice the timeout), so a killed worker's turn frees itself.
TURN_MARGIN_SECONDS = 10.0


@dataclass
class AskResult:
    """One batch asked: the verdict on every pair, or why there is none."""

    prompt: JudgePrompt | None = None
    request: dict[str, Any] = field(default_factory=dict)
    answer_text: str = ""
    verdict: Verdict | None = None
    error: str = ""
    # "" when answered; else a JudgeCall status ("timeout", "refused", ...), "prompt"
    # for a template that cannot render, "api_key" for a key that cannot be decrypted, or
    # "no_turn" when the rate limit gave no turn in
    # time (the model was never asked: the pairs go back to the queue, nothing failed).
    error_kind: str = ""
    calls: list[JudgeCall] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0

    @property
    def ok(self) -> bool:
        return self.verdict is not None


def provider_for(judge: Judge) -> providers.Provider:
    if judge.provider not in CALLED_PROVIDERS:
        # A clicks grader has nothing to call: its test and its runs compute in-process.
        raise providers.ProviderConfigError(
            f"{judge.get_provider_display()} grades without calling a model.")
    defaults = {Judge.Provider.OPENAI: providers.OPENAI_BASE_URL,
                Judge.Provider.ANTHROPIC: providers.ANTHROPIC_BASE_URL,
                Judge.Provider.OLLAMA: providers.OLLAMA_BASE_URL}
    base_url = judge.base_url or defaults[judge.provider]
    if judge.provider == Judge.Provider.ANTHROPIC:
        return providers.Anthropic(model=judge.model, base_url=base_url)
    if judge.provider == Judge.Provider.OLLAMA:
        return providers.Ollama(model=judge.model, base_url=base_url)
    return providers.OpenAICompatible(model=judge.model, base_url=base_url)


def sends_images(judge: Judge) -> bool:
    """The judge's "send images" (by URL; to Ollama, fetched first: judges.images)."""
    return judge.send_images


def template_for(judge: Judge, scale: Scale) -> str:
    """The judge's template for this scale, else the shipped default (judges/core/templates)."""
    return (judge.prompt_templates or {}).get(scale.code) or default_template(scale)


def retry_policy(judge: Judge) -> RetryPolicy:
    return RetryPolicy(max_attempts=judge.max_retries + 1,
                       backoff_seconds=settings.JUDGE_RETRY_BACKOFF_MS / 1000,
                       max_retry_after_seconds=settings.JUDGE_MAX_RETRY_AFTER_SECONDS)


def call_deadline_seconds(judge: Judge) -> float:
    """The longest one ask() can take: every attempt to its body deadline, every wait."""
    policy = retry_policy(judge)
    attempts = policy.max_attempts
    # The longest wait before each retry: its backoff at the jitter's top, or the longest
    # Retry-After the policy waits.
    waits = sum(max(policy.max_retry_after_seconds, policy.backoff(n, random=lambda: 1.0))
                for n in range(1, attempts))
    return attempts * (outbound_sending.slow_body_seconds(judge.timeout_seconds) + 5) + waits


def new_client(judge: Judge) -> httpx.Client:
    return outbound.new_client(timeout_seconds=judge.timeout_seconds,
                               connections=max(1, judge.max_concurrent_requests))


def transmit(judge: Judge, client: httpx.Client):
    """Send through the outbound rules: the network policy on every address, redirects
    followed hop by hop (same origin; another origin only when the judge allows it, and
    then without its key). What the rules refuse is a call that failed for good."""
    def sending(request: httpx.Request) -> httpx.Response:
        started, outcome = time.monotonic(), "error"
        try:
            response = outbound.send(client, request, allow_cross_origin_redirects=(
                judge.allow_cross_origin_redirects))
            outcome = "ok" if response.status_code < 400 else "error"
            return response
        except outbound.RedirectRefused as error:
            raise providers.ProviderRefused(
                # The rule's words are an endpoint's; a judge's admin reads them here.
                str(error).replace("on the endpoint", "on the judge").replace(
                    "the endpoint", "the provider"),
                status_code=error.response.status_code) from error
        except httpx.HTTPError as error:
            refused = outbound.refusal(error)
            if refused is None:
                raise
            raise providers.ProviderRefused(str(refused)) from error
        finally:
            instruments.JUDGE_CALLS.labels(outcome).inc()
            instruments.JUDGE_CALL_SECONDS.observe(time.monotonic() - started)
    return sending


IN_FLIGHT = "in_flight"


def ask(*, judge: Judge, keyword: str, guidelines: str, scale: Scale,
        documents: list[Document], run: JudgeRun | None = None, is_test: bool = False,
        client: httpx.Client | None = None, deadline_at: float | None = None) -> AskResult:
    """Ask about one batch (1..20 documents of one keyword); never raises for the model's
    or the network's failures, they are in the result and in the call log.

    Each attempt is logged before it leaves ("in_flight") and completed when it returns,
    so a worker that dies mid-call leaves its call counted. `deadline_at` (monotonic)
    bounds the wait for the judge's shared turn too (the Test's page is waiting)."""
    result = AskResult()
    provider = provider_for(judge)
    own_client = client is None
    client = client or new_client(judge)
    try:
        return _ask(result, provider, judge=judge, keyword=keyword, guidelines=guidelines,
                    scale=scale, documents=documents, run=run, is_test=is_test, client=client,
                    deadline_at=deadline_at)
    finally:
        if own_client:
            client.close()


def _ask(result: AskResult, provider: providers.Provider, *, judge: Judge, keyword: str,
         guidelines: str, scale: Scale, documents: list[Document], run: JudgeRun | None,
         is_test: bool, client: httpx.Client, deadline_at: float | None) -> AskResult:
    fetched: list[images.FetchedImage] = []
    try:
        result.prompt = build_prompt(template_for(judge, scale), keyword=keyword,
                                     guidelines=guidelines, documents=documents, scale=scale,
                                     send_images=sends_images(judge))
        sent_images = result.prompt.images
        if sent_images and isinstance(provider, providers.Ollama):
            fetched = images.fetch_images(sent_images, client=client,
                                          timeout_seconds=judge.timeout_seconds)
            sent_images = images.inline_images(fetched)
        request = provider.build_request(
            system=result.prompt.system, user=result.prompt.user, schema=result.prompt.schema,
            images=sent_images,
            parameters=judge.parameters or {}, api_key=decrypt_api_key(judge.api_key_encrypted)
            or None)
    except (PromptError, providers.ProviderConfigError) as error:
        result.error, result.error_kind = str(error), "prompt"
        return result
    except SecretsUnreadable as error:
        # SECRET_KEY changed since the key was saved: every batch would fail alike.
        result.error, result.error_kind = str(error), "api_key"
        return result

    logged: list[JudgeCall] = []
    shown_request = images.shown_request(redacted(request), fetched)
    wait_seconds = float(settings.OUTBOUND_LIMIT_WAIT_SECONDS)
    if deadline_at is not None:
        wait_seconds = min(wait_seconds, max(deadline_at - time.monotonic(), 0.0))

    @contextmanager
    def gate() -> Iterator[None]:
        with outbound_limits.turn(
                f"judge:{judge.pk}", max_concurrent=judge.max_concurrent_requests,
                per_minute=judge.requests_per_minute, wait_seconds=wait_seconds,
                lease_seconds=outbound_sending.slow_body_seconds(judge.timeout_seconds)
                + TURN_MARGIN_SECONDS):
            logged.append(JudgeCall.objects.create(
                judge=judge, run=run, status=IN_FLIGHT, started_at=timezone.now(),
                pair_count=len(documents), request=shown_request, is_test=is_test))
            if run is not None:
                # Counted as it leaves, like its row: a call is paid for once it is sent.
                JudgeRun.objects.filter(pk=run.pk).update(call_count=F("call_count") + 1)
            yield

    started_at = timezone.now()
    try:
        sent = send(provider, request, client=client, timeout_seconds=judge.timeout_seconds,
                    policy=retry_policy(judge), gate=gate, transmit=transmit(judge, client))
    except outbound_limits.LimitWaitExceeded as error:
        result.error, result.error_kind = _no_turn_message(judge, error, wait_seconds,
                                                           deadline_at), "no_turn"
        _abandoned(logged)
        return result
    sent.request = shown_request
    result.request = sent.request
    ids = [document.id for document in documents]
    if sent.ok:
        result.answer_text = sent.completion.text
        result.tokens_in = sent.completion.tokens_in or 0
        result.tokens_out = sent.completion.tokens_out or 0
        result.verdict = validate_answer(sent.completion.answer, ids=ids,
                                         grades=list(scale.grades))
    else:
        result.error = sent.error.message
        result.error_kind = _error_status(sent.error)
        result.answer_text = sent.attempts[-1].response_text if sent.attempts else ""
    result.calls = _call_rows(judge=judge, run=run, is_test=is_test, sent=sent,
                              verdict=result.verdict, pair_count=len(ids), started_at=started_at)
    for row, in_flight in zip(result.calls, logged, strict=False):
        row.pk, row.started_at = in_flight.pk, in_flight.started_at
    if len(result.calls) == 1:
        # Most calls are one attempt: one UPDATE, not bulk_update's transaction and CASEs.
        [row] = result.calls
        JudgeCall.objects.filter(pk=row.pk).update(
            **{name: getattr(row, name) for name in CALL_OUTCOME_FIELDS})
    else:
        JudgeCall.objects.bulk_update(result.calls, CALL_OUTCOME_FIELDS)
    return result


CALL_OUTCOME_FIELDS = ["status", "http_status", "latency_ms", "tokens_in", "tokens_out",
                       "answer", "error"]


def _abandoned(logged: list[JudgeCall]) -> None:
    """Attempts sent before a retry found no turn: made (so counted), outcome not kept."""
    JudgeCall.objects.filter(pk__in=[row.pk for row in logged]).update(
        error="its outcome was not kept: the retry after it got no turn in time")


def _no_turn_message(judge: Judge, error: Exception, wait_seconds: float,
                     deadline_at: float | None) -> str:
    if deadline_at is None:
        return str(error)
    return (f"No turn to call {judge.name} came within {wait_seconds:.0f} s, the time this "
            f"Test may wait: its {judge.max_concurrent_requests} concurrent request(s)"
            + (f" and {judge.requests_per_minute} a minute" if judge.requests_per_minute
               else "")
            + " are in use by its runs. Try again later, or allow it more concurrent "
              "requests.")


def _error_status(error: providers.ProviderError) -> str:
    if isinstance(error, providers.ProviderRefused):
        return "refused"
    if isinstance(error, providers.RateLimited):
        return "rate_limited"
    if isinstance(error, providers.ProviderTimeout):
        return "timeout"
    if isinstance(error, providers.ProviderUnreachable):
        return "unreachable"
    if isinstance(error, providers.MalformedResponse):
        return "malformed"
    return "http_error"


def _attempt_status(attempt: Attempt) -> str:
    """An earlier attempt's status, from what the sender kept of it."""
    if not attempt.error:
        return "ok"
    if attempt.status_code == 429:
        return "rate_limited"
    if attempt.status_code is None:
        return "timeout" if "no answer within" in attempt.error else "unreachable"
    return "http_error" if attempt.status_code >= 300 else "malformed"


def _call_rows(*, judge: Judge, run: JudgeRun | None, is_test: bool, sent: CallResult,
               verdict: Verdict | None, pair_count: int, started_at) -> list[JudgeCall]:
    """One unsaved JudgeCall per attempt, the last one with the tokens."""
    rows, at = [], started_at
    last = len(sent.attempts) - 1
    for number, attempt in enumerate(sent.attempts):
        status = _attempt_status(attempt)
        if number == last and not sent.ok:
            status = _error_status(sent.error)
        elif number == last and verdict is not None and not verdict.accepted and any(
                rejected.code == Rejection.MALFORMED for rejected in verdict.rejected):
            status = "malformed"
        completion = sent.completion if number == last else None
        rows.append(JudgeCall(
            judge=judge, run=run, status=status, http_status=attempt.status_code,
            started_at=at, latency_ms=attempt.duration_ms,
            tokens_in=completion.tokens_in if completion else None,
            tokens_out=completion.tokens_out if completion else None,
            pair_count=pair_count, request=sent.request, answer=attempt.response_text,
            error=attempt.error, is_test=is_test))
        at += timedelta(milliseconds=attempt.duration_ms, seconds=attempt.waited_seconds)
    return rows
