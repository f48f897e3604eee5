"""One call to a model: timeouts, retries with exponential backoff and jitter, Retry-After.

The rules (backoff, Retry-After, the answer-size cap, the slow-body deadline, which
network errors are worth another try) are outbound_sending's, shared with fetching; this
module applies them to a provider's protocol and words its errors.
The caller hands in the httpx.Client (the app's outbound-policy client decides where a
request may go) and may inject ``sleep`` and ``random`` so tests control the clock. Every
attempt is kept, scrubbed of the key, because the app logs each one with its latency.
"""

from __future__ import annotations

import random as random_module
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import httpx

from judges.core.providers import (
    Completion,
    HTTPStatusError,
    MalformedResponse,
    Provider,
    ProviderError,
    ProviderTimeout,
    ProviderUnreachable,
)
from judges.core.redaction import redacted, scrub, secrets_of
from searchtweak import outbound_sending

# An answer for 20 documents is a few KB; a body this large is a misbehaving server.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
RESPONSE_TEXT_CHARS = 64 * 1024


@dataclass(frozen=True)
class RetryPolicy(outbound_sending.RetryPolicy):
    """outbound_sending's policy with a judge's defaults: backoff with equal jitter up to
    30 s, and a provider's Retry-After waited up to 120 s."""

    max_backoff_seconds: float = 30.0
    jitter: bool = True
    max_retry_after_seconds: float = 120.0
    # A timed-out request may still be running (and billed) at the provider; by default
    # the slots go back to the pool instead of asking again at once.
    retry_timeouts: bool = False


@dataclass(frozen=True)
class Attempt:
    """One HTTP exchange, ready for the call log (no credential in it)."""

    status_code: int | None
    duration_ms: int
    response_text: str
    error: str = ""
    waited_seconds: float = 0.0
    """How long the sender slept after this attempt before the next one."""


@dataclass
class CallResult:
    """The outcome of a call: a completion or the error of its last attempt, never both."""

    request: dict[str, Any]
    """The redacted request (judges.core.redaction.redacted)."""
    completion: Completion | None = None
    error: ProviderError | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.completion is not None


Transmit = Callable[[httpx.Request], httpx.Response]
"""Sends one request and returns the final response, streaming (the app's outbound rules
follow redirects here); may raise httpx errors, or a ProviderError of its own."""


def send(provider: Provider, request: httpx.Request, *, client: httpx.Client,
         timeout_seconds: float, policy: RetryPolicy | None = None,
         sleep: Callable[[float], None] = time.sleep,
         random: Callable[[], float] = random_module.random,
         gate: Callable[[], AbstractContextManager[Any]] = nullcontext,
         transmit: Transmit | None = None) -> CallResult:
    """Send ``request`` (built by ``provider``) until it succeeds, fails for good, or the
    policy's attempts run out. Never raises a ProviderError: it is in the result.

    ``gate`` is entered around each attempt (not the backoff sleeps): the app's shared
    rate limit counts every HTTP request and holds no turn while a retry waits. Whatever
    the gate raises (no turn in time) ends the call and propagates. ``transmit`` replaces
    ``client.send`` (without it, no redirect is followed)."""
    policy = policy or RetryPolicy()
    secrets = secrets_of(request)
    # Per request, so the caller's client keeps its own defaults for everything else.
    request.extensions = {**request.extensions, "timeout": httpx.Timeout(
        timeout_seconds, connect=outbound_sending.connect_timeout_seconds(timeout_seconds),
    ).as_dict()}
    result = CallResult(request=redacted(request))
    for number in range(1, policy.max_attempts + 1):
        with gate():
            started = time.monotonic()
            status_code, text, completion, error = _attempt(
                provider, request, transmit=transmit or (
                    lambda outgoing: client.send(outgoing, stream=True)),
                timeout_seconds=timeout_seconds)
        duration_ms = round((time.monotonic() - started) * 1000)
        text = scrub(text, secrets)[:RESPONSE_TEXT_CHARS]
        if error is not None:
            error.message = scrub(error.message, secrets)
            error.args = (error.message,)
        wait = _wait_before_retry(error, number, policy, random)
        result.attempts.append(Attempt(status_code=status_code, duration_ms=duration_ms,
                                       response_text=text,
                                       error=error.message if error else "",
                                       waited_seconds=wait or 0.0))
        result.completion, result.error = completion, error
        if wait is None:
            return result
        sleep(wait)
    return result


def _wait_before_retry(error: ProviderError | None, number: int, policy: RetryPolicy,
                       random: Callable[[], float]) -> float | None:
    """Seconds to sleep before attempt ``number + 1``, or None to stop here."""
    if error is None or number >= policy.max_attempts:
        return None
    retryable = error.retryable or (policy.retry_timeouts and isinstance(error, ProviderTimeout))
    if not retryable:
        return None
    retry_after = getattr(error, "retry_after_seconds", None)
    refusal = policy.retry_after_refusal(retry_after)
    if refusal:
        error.message += refusal
        return None
    return policy.wait_before_retry(number, retry_after=retry_after, random=random)


def _attempt(provider: Provider, request: httpx.Request, *, transmit: Transmit,
             timeout_seconds: float
             ) -> tuple[int | None, str, Completion | None, ProviderError | None]:
    """(status, body text, completion, error) of one exchange."""
    slow_seconds = outbound_sending.slow_body_seconds(timeout_seconds)
    slow_at = time.monotonic() + slow_seconds
    try:
        response = transmit(request)
        try:
            body = outbound_sending.read_body(response, cap=MAX_RESPONSE_BYTES, slow_at=slow_at)
        except outbound_sending.AnswerTooLarge:
            return response.status_code, "", None, HTTPStatusError(
                f"the answer is larger than {MAX_RESPONSE_BYTES // 1024 // 1024} MB",
                status_code=response.status_code)
        except outbound_sending.AnswerTooSlow:
            return response.status_code, "", None, ProviderTimeout(
                f"the answer took longer than {slow_seconds:g} s to arrive",
                status_code=response.status_code)
        finally:
            response.close()
    except ProviderError as error:
        return None, "", None, error
    except httpx.ConnectTimeout:
        seconds = outbound_sending.connect_timeout_seconds(timeout_seconds)
        return None, "", None, ProviderUnreachable(f"could not connect within {seconds:g} s")
    except httpx.TimeoutException:
        # A timed-out request may still be running at the provider: a ProviderTimeout,
        # retried only when the policy says so (PoolTimeout included).
        return None, "", None, ProviderTimeout(f"no answer within {timeout_seconds:g} s")
    except outbound_sending.TRANSIENT_ERRORS as error:
        return None, "", None, ProviderUnreachable(f"{type(error).__name__}: {error}")
    except httpx.HTTPError as error:
        return None, "", None, ProviderError(f"{type(error).__name__}: {error}")
    # iter_bytes already decoded the body: a copied Content-Encoding would decode it twice.
    headers = [(name, value) for name, value in response.headers.items()
               if name.lower() not in {"content-encoding", "content-length"}]
    complete = httpx.Response(response.status_code, headers=headers, content=body,
                              request=request)
    try:
        return response.status_code, complete.text, provider.parse_response(complete), None
    except ProviderError as error:
        return response.status_code, complete.text, None, error
    except Exception as error:  # whatever the body does to the parser
        # An answer the protocol cannot read is that call's failure, logged with its text;
        # letting it escape would lose the call and crash the lane that asked.
        return response.status_code, complete.text, None, MalformedResponse(
            f"the answer could not be read ({type(error).__name__}: {error})"[:300],
            status_code=response.status_code)
