"""Writes for endpoints and search models: create, update, delete (archive when used),
restore, and the one-off test query; header cleaning and field validation.

Longer than our ~450-line mark on purpose: endpoints, their models and the test query share
the header splitting and field checks here, and each write records its audit event beside
it; the test query (endpoint_test, search_model_test) is the part to move out next."""

import json
import re
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.models import Action
from audit.services import audit_object, fields_of
from evaluations import crypto
from evaluations.endpoints.mapper import mapper_problems, validate_mapper
from evaluations.fetching.search_requests import (
    PLACEHOLDER,
    FetchResult,
    RequestSpec,
    fetch_keyword_results,
    new_client,
    request_spec_for,
    secret_values,
)
from evaluations.models import Endpoint, SearchModel
from evaluations.offline_runs.services import offline_model_update
from searchtweak import outbound, outbound_limits
from searchtweak.json_input import JSONInputError, json_loads
from searchtweak.models import Team, User

MAX_TIMEOUT_SECONDS = 120.0
LIMIT_MAXIMUMS = {"max_concurrent_requests": 1000, "requests_per_minute": 1_000_000}
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def _clean_headers(field: str, headers: Any) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, dict):
        raise ValidationError({field: "must be an object {name: value}"})
    clean: dict[str, str] = {}
    for name, value in headers.items():
        name = str(name).strip()
        if not _HEADER_NAME.match(name):
            raise ValidationError({field: f"{name!r} is not a valid header name"})
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ValidationError({field: f"the value of {name} must be a string"})
        value = str(value)
        if "\r" in value or "\n" in value:
            raise ValidationError({field: f"the value of {name} may not contain line breaks"})
        clean[name] = value
    return clean


def _split_headers(
    *, headers: dict[str, str], secret_headers: dict[str, str], stored: dict[str, str],
    field: str = "secret_headers",
) -> tuple[dict[str, str], dict[str, str]]:
    """Plain and secret headers. Sensitive names are secret wherever they were entered; a
    masked value ("••••abcd", as shown back) keeps the stored secret of that name."""
    plain: dict[str, str] = {}
    secrets: dict[str, str] = {}
    for name, value in list(headers.items()) + list(secret_headers.items()):
        secret = name in secret_headers or crypto.looks_secret(name) or crypto.is_masked(value)
        if not secret:
            plain[name] = value
            continue
        if crypto.is_masked(value):
            if name not in stored:
                raise ValidationError({field: f"enter the value of {name}, not a mask"})
            value = stored[name]
        secrets[name] = value
    return plain, secrets


_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?"
_HOST = re.compile(rf"^(?:{_HOST_LABEL}\.)*{_HOST_LABEL}\.?$|^[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*$")


def is_http_url(url: str) -> bool:
    """An http(s) URL with a host. Unlike URLValidator, a host without a dot passes: search
    engines often sit at http://elasticsearch:9200 or http://solr:8983 beside the app."""
    return not http_url_problem(url)


def http_url_problem(url: str) -> str:
    """Why `url` is no http(s) URL that requests can be sent to ("" when it is), as
    is_http_url judges it; the HTTP client's own reading says what it cannot parse."""
    unreadable = outbound.url_problem(url)
    if unreadable.startswith("The HTTP client"):
        return unreadable
    if any(char.isspace() for char in url) or unreadable:
        return HTTP_URL_PROBLEM
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return HTTP_URL_PROBLEM
    if parts.scheme in ("http", "https") and bool(parts.hostname) and \
            bool(_HOST.match(parts.hostname)):
        return ""
    return HTTP_URL_PROBLEM


HTTP_URL_PROBLEM = "Enter an http:// or https:// URL."


def _validate_endpoint_fields(*, name: str, url: str, method: str, timeout_seconds: float,
                              mapper: Any, max_concurrent_requests: int | None = None,
                              requests_per_minute: int | None = None) -> dict[str, Any]:
    """The mapper normalised; every bad field is named in one ValidationError."""
    problems: dict[str, str] = {}
    for field, limit in (("max_concurrent_requests", max_concurrent_requests),
                         ("requests_per_minute", requests_per_minute)):
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or not 1 <= limit <= LIMIT_MAXIMUMS[field]):
            problems[field] = (f"A whole number from 1 to {LIMIT_MAXIMUMS[field]}, or empty "
                               "for no limit.")
    if not name.strip():
        problems["name"] = "An endpoint needs a name."
    if http_url_problem(url):
        problems["url"] = http_url_problem(url)
    if method not in Endpoint.Method.values:
        problems["method"] = f"Use one of {', '.join(Endpoint.Method.values)}."
    if not 0 < timeout_seconds <= MAX_TIMEOUT_SECONDS:
        problems["timeout_seconds"] = f"Between 0 and {MAX_TIMEOUT_SECONDS:g} seconds."
    problems.update(mapper_problems(mapper))
    if problems:
        raise ValidationError(problems)
    return validate_mapper(mapper)


@transaction.atomic
def endpoint_create(
    *, team: Team, created_by: User | None, name: str, url: str, mapper: dict[str, Any],
    method: str = Endpoint.Method.GET, headers: dict | None = None,
    secret_headers: dict | None = None, timeout_seconds: float = 10.0,
    max_concurrent_requests: int | None = 16, requests_per_minute: int | None = None,
    allow_cross_origin_redirects: bool = False,
) -> Endpoint:
    mapper = _validate_endpoint_fields(
        name=name, url=url, method=method, timeout_seconds=timeout_seconds, mapper=mapper,
        max_concurrent_requests=max_concurrent_requests, requests_per_minute=requests_per_minute)
    plain, secrets = _split_headers(
        headers=_clean_headers("headers", headers),
        secret_headers=_clean_headers("secret_headers", secret_headers), stored={},
    )
    endpoint = Endpoint.objects.create(
        team=team, created_by=created_by, name=name.strip(), url=url, method=method,
        headers=plain, secret_headers_encrypted=crypto.encrypt_headers(secrets),
        timeout_seconds=timeout_seconds, mapper=mapper,
        max_concurrent_requests=max_concurrent_requests, requests_per_minute=requests_per_minute,
        allow_cross_origin_redirects=bool(allow_cross_origin_redirects),
    )
    audit_object(action=Action.ENDPOINT_CREATED, instance=endpoint, object_type="endpoint",
                 actor=created_by, after=fields_of(endpoint))
    return endpoint


def endpoint_secret_headers(*, endpoint: Endpoint) -> dict[str, str]:
    return crypto.decrypt_headers(endpoint.secret_headers_encrypted)


@transaction.atomic
def endpoint_update(*, endpoint: Endpoint, **changes: Any) -> Endpoint:
    """Change any of name, url, method, timeout_seconds, mapper, max_concurrent_requests,
    requests_per_minute, allow_cross_origin_redirects, headers, secret_headers, archived.
    Headers and secret_headers together describe the full new set (see _split_headers);
    giving only secret_headers keeps the plain headers."""
    allowed = {"name", "url", "method", "timeout_seconds", "mapper", "max_concurrent_requests",
               "requests_per_minute", "allow_cross_origin_redirects", "headers",
               "secret_headers", "archived"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "cannot be changed"})
    before = fields_of(endpoint)
    fields = {key: changes.get(key, getattr(endpoint, key))
              for key in ("name", "url", "method", "timeout_seconds", "mapper",
                          "max_concurrent_requests", "requests_per_minute")}
    fields["mapper"] = _validate_endpoint_fields(**fields)
    fields["allow_cross_origin_redirects"] = bool(changes.get(
        "allow_cross_origin_redirects", endpoint.allow_cross_origin_redirects))
    update_fields = list(fields)
    for key, value in fields.items():
        setattr(endpoint, key, value.strip() if key == "name" else value)
    if "headers" in changes or "secret_headers" in changes:
        stored = endpoint_secret_headers(endpoint=endpoint) if endpoint.secret_headers_encrypted \
            else {}
        headers = changes.get("headers")
        if headers is None:
            headers = dict(endpoint.headers)
        secret_headers = changes.get("secret_headers")
        if secret_headers is None:
            secret_headers = {} if "headers" in changes else {
                name: crypto.mask(value) for name, value in stored.items()}
        plain, secrets = _split_headers(
            headers=_clean_headers("headers", headers),
            secret_headers=_clean_headers("secret_headers", secret_headers), stored=stored,
        )
        endpoint.headers = plain
        endpoint.secret_headers_encrypted = crypto.encrypt_headers(secrets)
        update_fields += ["headers", "secret_headers_encrypted"]
    if "archived" in changes:
        endpoint.archived_at = (endpoint.archived_at or timezone.now()) if changes["archived"] \
            else None
        update_fields.append("archived_at")
    endpoint.save(update_fields=update_fields)
    audit_object(action=Action.ENDPOINT_CHANGED, instance=endpoint, object_type="endpoint",
                 before=before, after=fields_of(endpoint))
    return endpoint


def endpoint_test(
    *, team: Team, query: str, params: dict[str, str], url: str, mapper: dict[str, Any],
    method: str = Endpoint.Method.GET, headers: dict | None = None,
    secret_headers: dict | None = None, timeout_seconds: float = 10.0,
    allow_cross_origin_redirects: bool = False, max_concurrent_requests: int | None = None,
    requests_per_minute: int | None = None,
    endpoint: Endpoint | None = None, transport: httpx.BaseTransport | None = None,
) -> FetchResult:
    """Send one query with endpoint settings not saved yet (the form's) and map the answer,
    exactly as a fetch would, once, storing nothing. `params` stand in for a search model's;
    `endpoint` is the stored endpoint being edited, whose secrets a masked value keeps.
    Raises TestsBusy when `team` already runs its Tests at once."""
    problems: dict[str, str] = {}
    if not query.strip():
        problems["query"] = "Enter a query to test with."
    if PLACEHOLDER not in url and not any(PLACEHOLDER in str(value) for value in params.values()):
        problems["params"] = "Put #query# where the keyword goes, e.g. q=#query#."
    try:
        mapper = _validate_endpoint_fields(
            name="test", url=url, method=method, timeout_seconds=timeout_seconds, mapper=mapper,
            max_concurrent_requests=max_concurrent_requests,
            requests_per_minute=requests_per_minute)
    except ValidationError as error:
        problems.update({field: messages[0] for field, messages in error.message_dict.items()})
    if problems:
        raise ValidationError(problems)
    try:
        stored = endpoint_secret_headers(endpoint=endpoint) if endpoint is not None and \
            endpoint.secret_headers_encrypted else {}
    except crypto.SecretsUnreadable as error:
        return FetchResult(error=str(error), error_field="secret_headers")
    plain, secrets = _split_headers(
        headers=_clean_headers("headers", headers),
        secret_headers=_clean_headers("secret_headers", secret_headers), stored=stored,
    )
    spec = RequestSpec(
        endpoint_id=endpoint.pk if endpoint is not None else 0, method=method, url=url,
        params=dict(params), headers={**plain, **secrets}, body=None,
        body_format=SearchModel.BodyFormat.JSON, timeout_seconds=timeout_seconds,
        mapper=mapper, limit=settings.FETCH_MAX_RESULTS,
        allow_cross_origin_redirects=bool(allow_cross_origin_redirects),
        # The limits as typed, under the stored endpoint's key: its engine counts every
        # request, fetches' and tests' together.
        max_concurrent_requests=max_concurrent_requests, requests_per_minute=requests_per_minute,
        secrets=secret_values(secrets),
    )
    return _fetch_once(spec, query, team_id=team.pk, transport=transport)


@transaction.atomic
def endpoint_delete(*, endpoint: Endpoint) -> bool:
    """Delete an unused endpoint; archive one that models use. True when deleted."""
    if endpoint.models.exists():
        if endpoint.archived_at is None:
            endpoint.archived_at = timezone.now()
            endpoint.save(update_fields=["archived_at"])
            audit_object(action=Action.ENDPOINT_CHANGED, instance=endpoint,
                         object_type="endpoint", before={"archived_at": None},
                         after={"archived_at": endpoint.archived_at.isoformat()})
        return False
    before = fields_of(endpoint)
    audit_object(action=Action.ENDPOINT_DELETED, instance=endpoint, object_type="endpoint",
                 before=before)
    endpoint.delete()
    return True


def endpoint_restore(*, endpoint: Endpoint) -> Endpoint:
    """Bring an archived endpoint back into the lists and the model form."""
    return endpoint_update(endpoint=endpoint, archived=False)



# --- search models -----------------------------------------------------------------------


def _validate_model_fields(
    *, team: Team, endpoint: Endpoint, name: str, params: Any, body: str | None,
    body_format: str, headers: dict[str, str],
) -> None:
    if not name.strip():
        raise ValidationError({"name": "A search model needs a name."})
    if endpoint.team_id != team.pk:
        raise ValidationError({"endpoint": "No such endpoint in this team."})
    if endpoint.archived_at is not None:
        raise ValidationError({"endpoint": f"{endpoint.name} is archived."})
    if not isinstance(params, dict):
        raise ValidationError({"params": "must be an object {name: value}"})
    for key, value in params.items():
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(item, str | int | float) and not isinstance(item, bool)
                   for item in items):
            raise ValidationError({"params": f"the value of {key} must be text or a number"})
        # PostgreSQL's jsonb cannot hold U+0000: storing one would fail the whole request.
        if "\x00" in key or any("\x00" in str(item) for item in items):
            raise ValidationError({"params": f"{key!r} may not contain a NUL character "
                                   "(U+0000)"})
    if body_format not in SearchModel.BodyFormat.values:
        raise ValidationError({"body_format": "Use json or form."})
    if body is not None and body_format == SearchModel.BodyFormat.JSON and body.strip():
        try:
            # Only the syntax: the body is stored as the text typed and sent elsewhere.
            json_loads(body.replace(PLACEHOLDER, "keyword"), storable=False)
        except JSONInputError as error:
            problem = error.decode_error or error.message
            raise ValidationError({"body": f"not valid JSON ({problem}); put #query# inside a "
                                   "JSON string, e.g. {\"q\": \"#query#\"}"}) from None
    places = [endpoint.url, json.dumps(params), body or "", json.dumps(headers)]
    if not any(PLACEHOLDER in place for place in places):
        raise ValidationError({"params": "Put #query# where the keyword goes: in a parameter, "
                               "the body, a header or the endpoint's URL."})


def search_model_secret_headers(*, model: SearchModel) -> dict[str, str]:
    """The model's headers with sensitive names, decrypted. Raises crypto.SecretsUnreadable."""
    return crypto.decrypt_headers(model.secret_headers_encrypted)


def search_model_headers_shown(*, model: SearchModel) -> dict[str, str]:
    """The model's headers as pages and the API show them: secret ones masked."""
    try:
        secrets = search_model_secret_headers(model=model)
    except crypto.SecretsUnreadable:
        secrets = {}
    return {**model.headers, **{name: crypto.mask(value) for name, value in secrets.items()}}


def _split_model_headers(headers: Any, stored: dict[str, str]) -> tuple[dict[str, str],
                                                                        dict[str, str]]:
    """A model's headers as entered: plain ones, and those with sensitive names (or a
    masked value, which keeps the stored secret of that name) to encrypt."""
    return _split_headers(headers=_clean_headers("headers", headers), secret_headers={},
                          stored=stored, field="headers")


@transaction.atomic
def search_model_create(
    *, team: Team, created_by: User | None, endpoint: Endpoint, name: str,
    params: dict | None = None, body: str | None = None,
    body_format: str = SearchModel.BodyFormat.JSON, headers: dict | None = None,
    description: str = "", default_keywords: str = "",
) -> SearchModel:
    params = {} if params is None else params
    plain, secrets = _split_model_headers(headers, stored={})
    body = body if body is None or body.strip() else None
    _validate_model_fields(team=team, endpoint=endpoint, name=name, params=params, body=body,
                           body_format=body_format, headers={**plain, **secrets})
    model = SearchModel.objects.create(
        team=team, created_by=created_by, endpoint=endpoint, name=name.strip(), params=params,
        body=body, body_format=body_format, headers=plain,
        secret_headers_encrypted=crypto.encrypt_headers(secrets), description=description,
        default_keywords=default_keywords,
    )
    audit_object(action=Action.SEARCH_MODEL_CREATED, instance=model,
                 object_type="search_model", actor=created_by, after=fields_of(model))
    return model


@transaction.atomic
def search_model_update(*, model: SearchModel, **changes: Any) -> SearchModel:
    allowed = {"name", "endpoint", "params", "body", "body_format", "headers", "description",
               "default_keywords", "archived"}
    if model.is_offline:
        # No request to describe: its rankings come from its run (offline_runs).
        allowed = {"name", "description", "default_keywords", "archived"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "cannot be changed"})
    before = fields_of(model)
    if model.is_offline:
        model = offline_model_update(model=model, **changes)
    else:
        model = _online_model_update(model=model, changes=changes, allowed=allowed)
    audit_object(action=Action.SEARCH_MODEL_CHANGED, instance=model,
                 object_type="search_model", before=before, after=fields_of(model))
    return model


def _online_model_update(*, model: SearchModel, changes: dict[str, Any], allowed: set[str]
                         ) -> SearchModel:
    try:
        stored = search_model_secret_headers(model=model)
    except crypto.SecretsUnreadable:
        stored = {}  # a masked value then asks for the secret again
    secrets = stored
    if "headers" in changes:
        changes["headers"], secrets = _split_model_headers(changes["headers"], stored)
    if "body" in changes and changes["body"] is not None and not changes["body"].strip():
        changes["body"] = None
    values = {key: changes.get(key, getattr(model, key))
              for key in ("endpoint", "name", "params", "body", "body_format", "headers")}
    values["headers"] = {**values["headers"], **secrets}
    _validate_model_fields(team=model.team, **values)
    update_fields = []
    if "headers" in changes:
        model.secret_headers_encrypted = crypto.encrypt_headers(secrets)
        update_fields.append("secret_headers_encrypted")
    for key in allowed - {"archived"}:
        if key in changes:
            setattr(model, key, changes[key].strip() if key == "name" else changes[key])
            update_fields.append(key)
    if "archived" in changes:
        model.archived_at = (model.archived_at or timezone.now()) if changes["archived"] else None
        update_fields.append("archived_at")
    model.save(update_fields=update_fields)
    return model


@transaction.atomic
def search_model_delete(*, model: SearchModel) -> bool:
    """Delete an unused model; archive one that evaluations use. True when deleted."""
    if model.evaluations.exists():
        if model.archived_at is None:
            model.archived_at = timezone.now()
            model.save(update_fields=["archived_at"])
            audit_object(action=Action.SEARCH_MODEL_CHANGED, instance=model,
                         object_type="search_model", before={"archived_at": None},
                         after={"archived_at": model.archived_at.isoformat()})
        return False
    audit_object(action=Action.SEARCH_MODEL_DELETED, instance=model,
                 object_type="search_model", before=fields_of(model))
    model.delete()
    return True


def search_model_restore(*, model: SearchModel) -> SearchModel:
    """Bring an archived model back; its endpoint must be active (restore that first)."""
    if model.endpoint is not None and model.endpoint.archived_at is not None:
        raise ValidationError({"endpoint": f"Its endpoint {model.endpoint.name} is archived: "
                               "restore the endpoint first."})
    return search_model_update(model=model, archived=False)


def search_model_test(
    *, model: SearchModel, query: str, transport: httpx.BaseTransport | None = None
) -> FetchResult:
    """Run one query as a fetch would, once (no retries), and return what happened.
    Raises TestsBusy when the model's team already runs its Tests at once."""
    if model.is_offline:
        raise ValidationError({"model": "An offline model has no endpoint to query: its "
                               "rankings come from its run file."})
    if not query.strip():
        raise ValidationError({"query": "Enter a query."})
    try:
        spec = request_spec_for(model, limit=settings.FETCH_MAX_RESULTS)
    except crypto.SecretsUnreadable as error:
        return FetchResult(error=str(error), error_field="secret_headers")
    return _fetch_once(spec, query, team_id=model.team_id, transport=transport)


def _fetch_once(spec: RequestSpec, query: str, *, team_id: int,
                transport: httpx.BaseTransport | None) -> FetchResult:
    """Within the web request's own deadline and one of the team's Test turns: a test runs
    while the page waits."""
    with outbound_limits.team_test_turn(team_id=team_id), \
            new_client(timeout_seconds=spec.timeout_seconds, transport=transport) as client:
        return fetch_keyword_results(spec, query.strip(), client=client, retries=0,
                                     deadline_seconds=settings.OUTBOUND_TEST_DEADLINE_SECONDS)
