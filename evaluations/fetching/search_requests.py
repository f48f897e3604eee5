"""One search request per keyword: build it from a search model, send it with httpx, map it.

No database access here, so the fetch task can run the network part in threads while its
own thread stores the results (SQLite and test transactions stay on one connection).
"""

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

import httpx
from django.conf import settings

from evaluations import crypto
from evaluations.endpoints.mapper import Document, MapperError, map_documents
from evaluations.models import Endpoint, SearchModel
from searchtweak import instruments, outbound, outbound_limits, outbound_sending
from searchtweak.outbound_sending import RetryPolicy

# httpx logs every request at INFO: a line per keyword fetched drowns the worker's log.
logging.getLogger("httpx").setLevel(logging.WARNING)

PLACEHOLDER = "#query#"
RAW_PREVIEW_CHARS = 64 * 1024
_TOO_DEEP = "the response is nested too deeply to read (arrays or objects inside each other)"


@dataclass(frozen=True)
class RequestSpec:
    """Everything needed to query one endpoint with one model, secrets already decrypted."""

    endpoint_id: int
    method: str
    url: str
    params: dict[str, Any]
    headers: dict[str, str]
    body: str | None
    body_format: str
    timeout_seconds: float
    mapper: dict[str, Any]
    limit: int
    allow_cross_origin_redirects: bool = False
    max_concurrent_requests: int | None = None
    requests_per_minute: int | None = None
    # Values of the secret headers (see secret_values): scrubbed from everything the answer
    # leaves behind, so an engine that echoes its request shows no key to anyone.
    secrets: tuple[str, ...] = ()


@dataclass
class FetchResult:
    status_code: int | None = None
    duration_ms: int = 0
    documents: list[Document] | None = None
    error: str = ""
    error_field: str = ""
    raw: str = ""
    attempts: int = 0
    retryable: bool = field(default=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.documents is not None


def request_spec_for(model: SearchModel, *, limit: int) -> RequestSpec:
    """Raises crypto.SecretsUnreadable when the endpoint's or the model's secrets cannot be
    decrypted."""
    endpoint: Endpoint = model.endpoint
    endpoint_secrets = crypto.decrypt_headers(endpoint.secret_headers_encrypted)
    model_secrets = crypto.decrypt_headers(model.secret_headers_encrypted)
    headers = {**endpoint.headers, **endpoint_secrets, **model.headers, **model_secrets}
    return RequestSpec(
        endpoint_id=endpoint.pk, method=endpoint.method, url=endpoint.url,
        params=dict(model.params), headers=headers, body=model.body,
        body_format=model.body_format, timeout_seconds=endpoint.timeout_seconds,
        mapper=endpoint.mapper, limit=limit,
        allow_cross_origin_redirects=endpoint.allow_cross_origin_redirects,
        max_concurrent_requests=endpoint.max_concurrent_requests,
        requests_per_minute=endpoint.requests_per_minute,
        secrets=secret_values({**endpoint_secrets, **model_secrets}),
    )


# Replacing a 1-3 character "secret" everywhere would shred the answer and hide nothing.
MIN_SECRET_CHARS = 4
SECRET_MASK = "[redacted]"


def secret_values(secret_headers: dict[str, str]) -> tuple[str, ...]:
    """The values to scrub: each secret header's value, and the credential after an
    authorization scheme ("Bearer sk-…" → "sk-…"); longest first, so a key containing
    another is replaced whole."""
    values: set[str] = set()
    for value in secret_headers.values():
        values.add(value)
        scheme, _, credential = value.partition(" ")
        if credential and scheme.lower() in {"bearer", "basic", "token", "apikey"}:
            values.add(credential.strip())
    return tuple(sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len,
                        reverse=True))


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret replaced, also where it stands escaped inside a JSON string."""
    for secret in secrets:
        text = text.replace(secret, SECRET_MASK)
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        if escaped != secret:
            text = text.replace(escaped, SECRET_MASK)
    return text


def build_request(spec: RequestSpec, keyword: str) -> httpx.Request:
    """The request for `keyword`: #query# escaped for where it stands (URL, JSON, form).
    The model's params are added to the query string the endpoint's URL already has."""
    params: list[tuple[str, str]] = []
    for name, value in spec.params.items():
        for item in value if isinstance(value, list) else [value]:
            text = item if isinstance(item, str) else json.dumps(item)
            params.append((name, text.replace(PLACEHOLDER, keyword)))
    url = _url_with_params(spec.url.replace(PLACEHOLDER, quote(keyword, safe="")), params)
    headers = dict(outbound.BASE_HEADERS)
    for name, value in spec.headers.items():
        # A keyword may not smuggle extra header lines, and headers are ASCII on the wire.
        headers[name] = str(value).replace(PLACEHOLDER, quote(keyword, safe=" "))
    content = None
    if spec.body is not None and spec.method != "GET":
        if spec.body_format == SearchModel.BodyFormat.FORM:
            content = spec.body.replace(PLACEHOLDER, quote_plus(keyword))
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        else:
            # Inside a JSON string: json.dumps escapes quotes, backslashes and controls.
            content = spec.body.replace(PLACEHOLDER, json.dumps(keyword, ensure_ascii=False)[1:-1])
            headers.setdefault("Content-Type", "application/json")
    return httpx.Request(spec.method, url, headers=headers,
                         content=content.encode() if content is not None else None)


def _url_with_params(url: str, params: list[tuple[str, str]]) -> str:
    """`url` with `params` appended to its query. httpx's `params=` would replace the query
    (even with no params), dropping an `api-version=` or a `q=#query#` typed in the URL;
    the URL's own query is kept byte for byte, as the operator wrote it."""
    parts = urlsplit(url)
    query = "&".join(part for part in (parts.query, str(httpx.QueryParams(params))) if part)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def new_client(*, timeout_seconds: float, transport: httpx.BaseTransport | None = None,
               connections: int | None = None) -> httpx.Client:
    return outbound.new_client(
        timeout_seconds=timeout_seconds, transport=transport,
        connections=connections or settings.FETCH_CONCURRENCY_PER_ENDPOINT)


_semaphores: dict[int, threading.BoundedSemaphore] = {}
_semaphores_lock = threading.Lock()


def endpoint_semaphore(endpoint_id: int) -> threading.BoundedSemaphore:
    """At most FETCH_CONCURRENCY_PER_ENDPOINT requests in flight to one endpoint from this
    process, however many fetch tasks run in it."""
    with _semaphores_lock:
        if endpoint_id not in _semaphores:
            _semaphores[endpoint_id] = threading.BoundedSemaphore(
                settings.FETCH_CONCURRENCY_PER_ENDPOINT
            )
        return _semaphores[endpoint_id]


@dataclass(frozen=True)
class Deadline:
    """When the whole query must be over (monotonic clock), and the bound it came from."""

    at: float
    seconds: float

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def message(self, timeout_seconds: float) -> str:
        web = settings.WEB_TIMEOUT_SECONDS
        return (f"no complete answer within {self.seconds:g} s, the longest a test may take "
                f"(the web server stops a request at {web} s, WEB_TIMEOUT); fetching waits "
                f"up to the endpoint's own timeout of {timeout_seconds:g} s")


def retry_policy(retries: int | None = None) -> RetryPolicy:
    """FETCH_RETRIES more attempts (or `retries`) after FETCH_RETRY_BACKOFF_MS doubling,
    without jitter or a ceiling; an engine's Retry-After is not read (a 4xx is not retried)."""
    return RetryPolicy(
        max_attempts=(settings.FETCH_RETRIES if retries is None else retries) + 1,
        backoff_seconds=settings.FETCH_RETRY_BACKOFF_MS / 1000)


def fetch_keyword_results(
    spec: RequestSpec, keyword: str, *, client: httpx.Client, retries: int | None = None,
    sleep: Callable[[float], None] = time.sleep, deadline_seconds: float | None = None,
) -> FetchResult:
    """Query the endpoint for `keyword`, retrying connection errors and 5xx with backoff.

    `deadline_seconds` bounds everything (waiting for a turn, connecting, redirects,
    reading, retries): Test runs inside a web request, which the web server kills."""
    policy = retry_policy(retries)
    started = time.monotonic()
    result = _fetch_with_retries(spec, keyword, client=client, policy=policy, sleep=sleep,
                                 deadline_seconds=deadline_seconds)
    instruments.FETCHES.labels("error" if result.error else "ok").inc()
    instruments.FETCH_SECONDS.observe(time.monotonic() - started)
    return result


def _fetch_with_retries(spec: RequestSpec, keyword: str, *, client: httpx.Client,
                        policy: RetryPolicy, sleep: Callable[[float], None],
                        deadline_seconds: float | None) -> FetchResult:
    attempts = 0
    with outbound.deadline(deadline_seconds) as deadline_at:
        deadline = Deadline(deadline_at, deadline_seconds) if deadline_at is not None else None
        while True:
            attempts += 1
            with endpoint_semaphore(spec.endpoint_id):
                result = _attempt_in_turn(spec, keyword, client=client, deadline=deadline)
            result.attempts = attempts
            # An error may quote the engine (a redirect's Location, a mapper's value).
            result.error = scrub(result.error, spec.secrets)
            wait = policy.wait_before_retry(attempts) if result.retryable and not (
                deadline and deadline.passed()) else None
            if wait is None:
                if result.retryable and attempts > 1:
                    result.error += f" (after {attempts} attempts)"
                return result
            sleep(wait)


def _attempt_in_turn(spec: RequestSpec, keyword: str, *, client: httpx.Client,
                     deadline: Deadline | None) -> FetchResult:
    """One attempt, once the endpoint's shared limits give it a turn."""
    wait = settings.OUTBOUND_LIMIT_WAIT_SECONDS if deadline is None else \
        max(deadline.at - time.monotonic(), 0.0)
    try:
        with outbound_limits.turn(
            f"endpoint:{spec.endpoint_id}", max_concurrent=spec.max_concurrent_requests,
            per_minute=spec.requests_per_minute, wait_seconds=wait,
            # Longer than an attempt can last (connect, then the body's deadline below).
            lease_seconds=spec.timeout_seconds * 3 + 10,
        ):
            return _attempt(spec, keyword, client=client, deadline=deadline)
    except outbound_limits.LimitWaitExceeded as error:
        return FetchResult(error=str(error))


def _attempt(spec: RequestSpec, keyword: str, *, client: httpx.Client,
             deadline: Deadline | None) -> FetchResult:
    cap = settings.FETCH_MAX_RESPONSE_BYTES
    result = FetchResult()
    started = time.monotonic()
    slow_seconds = outbound_sending.slow_body_seconds(spec.timeout_seconds)
    try:
        request = build_request(spec, keyword)
        response = outbound.send(
            client, request, allow_cross_origin_redirects=spec.allow_cross_origin_redirects)
        try:
            result.status_code = response.status_code
            body = outbound_sending.read_body(
                response, cap=cap, slow_at=started + slow_seconds,
                deadline_at=deadline.at if deadline is not None else None)
        except outbound_sending.AnswerTooLarge:
            result.error = _too_big(cap)
            return result
        except outbound_sending.DeadlinePassed:
            assert deadline is not None
            result.error = deadline.message(spec.timeout_seconds)
            return result
        except outbound_sending.AnswerTooSlow:
            result.error = f"the endpoint took longer than {slow_seconds:g} s to send its answer"
            return result
        finally:
            response.close()
    except httpx.InvalidURL as error:
        # A URL stored before its save was checked by the same parser (outbound.url_problem).
        result.error = f"the HTTP client cannot read the endpoint's URL: {error}"
        return result
    except outbound.RedirectRefused as error:
        result.status_code = error.response.status_code
        result.error = str(error)
        return result
    except httpx.TimeoutException as error:
        if deadline is not None and deadline.passed():
            result.error = deadline.message(spec.timeout_seconds)
            return result
        result.error = _timeout_message(error, spec.timeout_seconds)
        result.retryable = isinstance(error, outbound_sending.TRANSIENT_ERRORS)
        return result
    except httpx.HTTPError as error:
        refused = outbound.refusal(error)
        if refused is not None:
            result.error = str(refused)
            return result
        result.error = f"request failed: {type(error).__name__}: {error}"
        result.retryable = isinstance(error, outbound_sending.TRANSIENT_ERRORS)
        return result
    finally:
        result.duration_ms = round((time.monotonic() - started) * 1000)
    # Before anything reads it: the preview, the documents and the errors are stored or shown.
    text = scrub(body.decode(response.encoding or "utf-8", errors="replace"),
                 spec.secrets)
    result.raw = text[:RAW_PREVIEW_CHARS]
    if response.status_code >= 500:
        result.error = f"HTTP {response.status_code} from the endpoint"
        result.retryable = True
        return result
    if response.status_code >= 400:
        result.error = f"HTTP {response.status_code} from the endpoint (not retried)"
        return result
    try:
        data = json.loads(text)
    except ValueError as error:
        result.error = f"the response is not valid JSON: {error}"
        return result
    except RecursionError:
        result.error = _TOO_DEEP
        return result
    try:
        result.documents = map_documents(spec.mapper, data, limit=spec.limit)
    except MapperError as error:
        result.error, result.error_field = str(error), error.field
    except RecursionError:
        # A field value nested just under the parser's limit: re-encoding it goes deeper.
        result.error = _TOO_DEEP
    return result


def _too_big(cap: int) -> str:
    size = f"{cap / 1024 / 1024:g} MB"
    return f"the response is larger than the {size} cap (FETCH_MAX_RESPONSE_BYTES)"


def _timeout_message(error: httpx.TimeoutException, timeout_seconds: float) -> str:
    if isinstance(error, httpx.ConnectTimeout):
        seconds = outbound_sending.connect_timeout_seconds(timeout_seconds)
        return f"could not connect within {seconds:g} s"
    return f"no answer within the endpoint's timeout of {timeout_seconds:g} s"


def limits_make_requests_wait(*, max_concurrent_requests: int | None,
                              requests_per_minute: int | None) -> bool:
    """Whether an endpoint's limits make a fetch wait even with one worker: a rate, or
    fewer requests at once than a worker sends. Waits behind other workers are not
    counted: a claim that lapses then costs a repeated request, never a stored duplicate."""
    return bool(requests_per_minute) or (
        max_concurrent_requests is not None
        and max_concurrent_requests < settings.FETCH_CONCURRENCY_PER_ENDPOINT)


def fetch_claim_lease_seconds(timeout_seconds: float, *, limited: bool = False) -> float:
    """How long a fetch task may hold a keyword's claim before it counts as lost: the
    longest one keyword's fetch can take against an endpoint with this timeout.

    Each attempt ends within three timeouts (the body deadline of two, checked after a
    read that may pause for one more); FETCH_RETRIES more attempts follow, after their
    backoffs; FETCH_CLAIM_MARGIN_SECONDS covers storing the answer. A task renews the
    claims it still holds whenever it stores a result, so this bounds the wait for the
    next result, not the whole batch. Under limits that make requests wait (`limited`,
    see `limits_make_requests_wait`) each attempt may first wait up to
    OUTBOUND_LIMIT_WAIT_SECONDS for its turn.
    """
    policy = retry_policy()
    attempts = policy.max_attempts
    backoffs = sum(policy.backoff(number) for number in range(1, attempts))
    turn_waits = attempts * settings.OUTBOUND_LIMIT_WAIT_SECONDS if limited else 0
    attempt_seconds = outbound_sending.slow_body_seconds(timeout_seconds) + timeout_seconds
    return (attempts * attempt_seconds + backoffs + turn_waits
            + settings.FETCH_CLAIM_MARGIN_SECONDS)
