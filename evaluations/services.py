"""Writes for endpoints, search models, evaluations and the snapshots fetched for them."""

import csv
import io
import json
import logging
import re
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from evaluations import crypto
from evaluations.fetching import (
    PLACEHOLDER,
    FetchResult,
    RequestSpec,
    fetch_keyword_results,
    new_client,
    request_spec_for,
)
from evaluations.hooks import scale_provider, team_scale
from evaluations.mapper import mapper_problems, validate_mapper
from evaluations.models import (
    Endpoint,
    Evaluation,
    EvaluationMetric,
    Keyword,
    SearchModel,
    Snapshot,
)
from evaluations.signals import snapshots_created
from metrics import core
from searchtweak.models import Team, User

logger = logging.getLogger(__name__)

MAX_KEYWORDS = 10_000
MAX_KEYWORD_LENGTH = 500  # Keyword.text's max_length
MAX_TIMEOUT_SECONDS = 120.0
DEFAULT_SNAPSHOT_DEPTH = 10
# A claim older than the fetch task's hard time limit belongs to a worker that died.
FETCH_CLAIM_LEASE = timedelta(seconds=1800)
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


# --- endpoints ---------------------------------------------------------------------------


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
    *, headers: dict[str, str], secret_headers: dict[str, str], stored: dict[str, str]
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
                raise ValidationError({"secret_headers": f"enter the value of {name}, not a mask"})
            value = stored[name]
        secrets[name] = value
    return plain, secrets


_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?"
_HOST = re.compile(rf"^(?:{_HOST_LABEL}\.)*{_HOST_LABEL}\.?$|^[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*$")


def is_http_url(url: str) -> bool:
    """An http(s) URL with a host. Unlike URLValidator, a host without a dot passes: search
    engines often sit at http://elasticsearch:9200 or http://solr:8983 beside the app."""
    if any(char.isspace() for char in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and \
        bool(_HOST.match(parts.hostname))


def _validate_endpoint_fields(*, name: str, url: str, method: str, timeout_seconds: float,
                              mapper: Any) -> dict[str, Any]:
    """The mapper normalised; every bad field is named in one ValidationError."""
    problems: dict[str, str] = {}
    if not name.strip():
        problems["name"] = "An endpoint needs a name."
    if not is_http_url(url):
        problems["url"] = "Enter an http:// or https:// URL."
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
) -> Endpoint:
    mapper = _validate_endpoint_fields(name=name, url=url, method=method,
                                       timeout_seconds=timeout_seconds, mapper=mapper)
    plain, secrets = _split_headers(
        headers=_clean_headers("headers", headers),
        secret_headers=_clean_headers("secret_headers", secret_headers), stored={},
    )
    return Endpoint.objects.create(
        team=team, created_by=created_by, name=name.strip(), url=url, method=method,
        headers=plain, secret_headers_encrypted=crypto.encrypt_headers(secrets),
        timeout_seconds=timeout_seconds, mapper=mapper,
    )


def endpoint_secret_headers(*, endpoint: Endpoint) -> dict[str, str]:
    return crypto.decrypt_headers(endpoint.secret_headers_encrypted)


@transaction.atomic
def endpoint_update(*, endpoint: Endpoint, **changes: Any) -> Endpoint:
    """Change any of name, url, method, timeout_seconds, mapper, headers, secret_headers,
    archived. Headers and secret_headers together describe the full new set (see
    _split_headers); giving only secret_headers keeps the plain headers."""
    allowed = {"name", "url", "method", "timeout_seconds", "mapper", "headers",
               "secret_headers", "archived"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "cannot be changed"})
    fields = {key: changes.get(key, getattr(endpoint, key))
              for key in ("name", "url", "method", "timeout_seconds", "mapper")}
    fields["mapper"] = _validate_endpoint_fields(**fields)
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
    return endpoint


def endpoint_test(
    *, query: str, params: dict[str, str], url: str, mapper: dict[str, Any],
    method: str = Endpoint.Method.GET, headers: dict | None = None,
    secret_headers: dict | None = None, timeout_seconds: float = 10.0,
    endpoint: Endpoint | None = None, transport: httpx.BaseTransport | None = None,
) -> FetchResult:
    """Send one query with endpoint settings not saved yet (the form's) and map the answer,
    exactly as a fetch would, once, storing nothing. `params` stand in for a search model's;
    `endpoint` is the stored endpoint being edited, whose secrets a masked value keeps."""
    problems: dict[str, str] = {}
    if not query.strip():
        problems["query"] = "Enter a query to test with."
    if PLACEHOLDER not in url and not any(PLACEHOLDER in str(value) for value in params.values()):
        problems["params"] = "Put #query# where the keyword goes, e.g. q=#query#."
    try:
        mapper = _validate_endpoint_fields(name="test", url=url, method=method,
                                           timeout_seconds=timeout_seconds, mapper=mapper)
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
    )
    return _fetch_once(spec, query, transport=transport)


@transaction.atomic
def endpoint_delete(*, endpoint: Endpoint) -> bool:
    """Delete an unused endpoint; archive one that models use. True when deleted."""
    if endpoint.models.exists():
        if endpoint.archived_at is None:
            endpoint.archived_at = timezone.now()
            endpoint.save(update_fields=["archived_at"])
        return False
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
    if body_format not in SearchModel.BodyFormat.values:
        raise ValidationError({"body_format": "Use json or form."})
    if body is not None and body_format == SearchModel.BodyFormat.JSON and body.strip():
        try:
            json.loads(body.replace(PLACEHOLDER, "keyword"))
        except ValueError as error:
            raise ValidationError({"body": f"not valid JSON ({error}); put #query# inside a "
                                   "JSON string, e.g. {\"q\": \"#query#\"}"}) from None
    places = [endpoint.url, json.dumps(params), body or "", json.dumps(headers)]
    if not any(PLACEHOLDER in place for place in places):
        raise ValidationError({"params": "Put #query# where the keyword goes: in a parameter, "
                               "the body, a header or the endpoint's URL."})


@transaction.atomic
def search_model_create(
    *, team: Team, created_by: User | None, endpoint: Endpoint, name: str,
    params: dict | None = None, body: str | None = None,
    body_format: str = SearchModel.BodyFormat.JSON, headers: dict | None = None,
    description: str = "", default_keywords: str = "",
) -> SearchModel:
    params = {} if params is None else params
    headers = _clean_headers("headers", headers)
    body = body if body is None or body.strip() else None
    _validate_model_fields(team=team, endpoint=endpoint, name=name, params=params, body=body,
                           body_format=body_format, headers=headers)
    return SearchModel.objects.create(
        team=team, created_by=created_by, endpoint=endpoint, name=name.strip(), params=params,
        body=body, body_format=body_format, headers=headers, description=description,
        default_keywords=default_keywords,
    )


@transaction.atomic
def search_model_update(*, model: SearchModel, **changes: Any) -> SearchModel:
    allowed = {"name", "endpoint", "params", "body", "body_format", "headers", "description",
               "default_keywords", "archived"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "cannot be changed"})
    if "headers" in changes:
        changes["headers"] = _clean_headers("headers", changes["headers"])
    if "body" in changes and changes["body"] is not None and not changes["body"].strip():
        changes["body"] = None
    values = {key: changes.get(key, getattr(model, key))
              for key in ("endpoint", "name", "params", "body", "body_format", "headers")}
    _validate_model_fields(team=model.team, **values)
    update_fields = []
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
        return False
    model.delete()
    return True


def search_model_restore(*, model: SearchModel) -> SearchModel:
    """Bring an archived model back; its endpoint must be active (restore that first)."""
    if model.endpoint.archived_at is not None:
        raise ValidationError({"endpoint": f"Its endpoint {model.endpoint.name} is archived: "
                               "restore the endpoint first."})
    return search_model_update(model=model, archived=False)


def search_model_test(
    *, model: SearchModel, query: str, transport: httpx.BaseTransport | None = None
) -> FetchResult:
    """Run one query as a fetch would, once (no retries), and return what happened."""
    if not query.strip():
        raise ValidationError({"query": "Enter a query."})
    try:
        spec = request_spec_for(model, limit=settings.FETCH_MAX_RESULTS)
    except crypto.SecretsUnreadable as error:
        return FetchResult(error=str(error), error_field="secret_headers")
    return _fetch_once(spec, query, transport=transport)


def _fetch_once(spec: RequestSpec, query: str,
                transport: httpx.BaseTransport | None) -> FetchResult:
    with new_client(timeout_seconds=spec.timeout_seconds, transport=transport) as client:
        return fetch_keyword_results(spec, query.strip(), client=client, retries=0)


# --- keywords ----------------------------------------------------------------------------


@dataclass
class KeywordList:
    keywords: list[str]
    duplicate_count: int = 0
    blank_count: int = 0

    def notice(self) -> str:
        removed = []
        if self.duplicate_count:
            removed.append(f"{self.duplicate_count} duplicate"
                           f"{'s' if self.duplicate_count != 1 else ''}")
        if self.blank_count:
            removed.append(f"{self.blank_count} blank line{'s' if self.blank_count != 1 else ''}")
        return f"Removed {' and '.join(removed)}." if removed else ""


def keywords_clean(lines: Iterable[str]) -> KeywordList:
    """Trimmed keywords in their first order; duplicates (case-folded) and blanks removed."""
    result = KeywordList(keywords=[])
    seen: set[str] = set()
    for line in lines:
        text = str(line).strip()
        if not text:
            result.blank_count += 1
            continue
        normalized = Keyword.normalize(text)
        if normalized in seen:
            result.duplicate_count += 1
            continue
        seen.add(normalized)
        result.keywords.append(text)
    return result


# Enough to fix a file; a file of garbage would otherwise answer with megabytes of errors.
MAX_UPLOAD_ERRORS = 50


def keywords_from_upload(*, filename: str, content: bytes) -> list[str]:
    """Lines of a TXT file, or the first column of a CSV file (a 'keyword' header is skipped).

    Each line is decoded as UTF-8 on its own (like judgments' imports), so a file mixing
    encodings names every bad line; every error names its line, and one error rejects the
    whole file.
    """
    if content.startswith(b"\xef\xbb\xbf"):
        content = content[3:]
    errors: list[str] = []
    lines: list[str] = []
    # bytes.splitlines breaks at \n, \r\n and \r only, the line ends editors number.
    for number, raw in enumerate(content.splitlines(), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            errors.append(f"line {number}: not UTF-8 text (byte 0x{raw[error.start]:02x} "
                          f"at column {error.start + 1})")
    if errors:
        _raise_upload_errors(errors)
    if filename.lower().endswith(".csv"):
        # A quoted CSV field may span lines: a row is numbered by the line it starts on.
        rows: list[tuple[int, str]] = []
        reader = csv.reader(io.StringIO("\n".join(lines)))
        start = 1
        try:
            for row in reader:
                rows.append((start, row[0] if row else ""))
                start = reader.line_num + 1
        except csv.Error as error:  # a field beyond csv's size limit
            _raise_upload_errors([f"line {start}: {error}"])
        if rows and rows[0][1].strip().lower() in {"keyword", "keywords", "query", "queries"}:
            rows = rows[1:]
    else:
        rows = list(enumerate(lines, start=1))
    errors = [f"line {number}: keyword longer than {MAX_KEYWORD_LENGTH} characters "
              f"({len(text.strip()):,})"
              for number, text in rows if len(text.strip()) > MAX_KEYWORD_LENGTH]
    if errors:
        _raise_upload_errors(errors)
    return [text for _, text in rows]


def _raise_upload_errors(errors: list[str]) -> None:
    extra = len(errors) - MAX_UPLOAD_ERRORS
    shown = errors[:MAX_UPLOAD_ERRORS] + ([f"… and {extra} more errors."] if extra > 0 else [])
    raise ValidationError({"keywords_file": shown})


def _validate_keywords(keywords: list[str]) -> None:
    if len(keywords) > MAX_KEYWORDS:
        raise ValidationError({"keywords": f"At most {MAX_KEYWORDS:,} keywords "
                               f"({len(keywords):,} given)."})
    too_long = next((k for k in keywords if len(k) > MAX_KEYWORD_LENGTH), None)
    if too_long:
        raise ValidationError({"keywords": f"{too_long[:40]!r}… is longer than "
                               f"{MAX_KEYWORD_LENGTH} characters."})


def _keyword_rows(evaluation: Evaluation, keywords: list[str], start: int = 1) -> list[Keyword]:
    return [Keyword(evaluation=evaluation, position=position, text=text,
                    normalized_text=Keyword.normalize(text))
            for position, text in enumerate(keywords, start=start)]


# --- evaluations -------------------------------------------------------------------------


def _team_scale(team: Team, code: str) -> core.Scale:
    scale = team_scale(team, code)
    if scale is None:
        raise ValidationError({"scale": f"Unknown scale {code!r}."})
    return scale


def _validate_metrics(metrics: Any) -> list[dict[str, Any]]:
    if not isinstance(metrics, list):
        raise ValidationError({"metrics": "must be a list of {code, k, params}"})
    clean, seen = [], set()
    for index, item in enumerate(metrics):
        if not isinstance(item, dict):
            raise ValidationError({"metrics": f"item {index + 1} must be an object"})
        params = item.get("params") or {}
        try:
            core.metric_spec(item.get("code"))
            k = core.validate_k(item.get("k"))
            core.resolve_params(params)
        except core.MetricInputError as error:
            raise ValidationError({"metrics": f"item {index + 1}: {error}"}) from None
        key = (item["code"], k, json.dumps(params, sort_keys=True))
        if key in seen:
            raise ValidationError({"metrics": f"item {index + 1}: "
                                   f"{core.metric_code_at_k(item['code'], k)} is listed twice"})
        seen.add(key)
        clean.append({"code": item["code"], "k": k, "params": params})
    return clean


def _validate_transformers(team: Team, scale: core.Scale, transformers: Any) -> dict:
    transformers = transformers or {}
    try:
        core.validate_transformers(transformers, scale)
    except core.MetricInputError as error:
        raise ValidationError({"transformers": str(error)}) from None
    return transformers


def _validate_evaluation_fields(*, team: Team, model: SearchModel, name: str,
                                strategy: int) -> None:
    if not name.strip():
        raise ValidationError({"name": "An evaluation needs a name."})
    if model.team_id != team.pk:
        raise ValidationError({"model": "No such search model in this team."})
    if model.archived_at is not None:
        raise ValidationError({"model": f"{model.name} is archived."})
    if strategy not in (1, 3):
        raise ValidationError({"strategy": "Use 1 or 3 graders per result."})


def _create_metric_configs(evaluation: Evaluation, metrics: list[dict[str, Any]]) -> None:
    # One by one, not bulk_create: the metrics app recomputes on EvaluationMetric post_save.
    for position, item in enumerate(metrics):
        EvaluationMetric.objects.create(evaluation=evaluation, position=position, **item)


@transaction.atomic
def evaluation_create(
    *, team: Team, created_by: User | None, model: SearchModel, name: str, scale: str,
    strategy: int, keywords: list[str], metrics: list[dict[str, Any]],
    transformers: dict | None = None, tags: list[str] | None = None, description: str = "",
    guidelines: str = "", reuse_grades: str = Evaluation.Reuse.NONE,
    show_position: bool = False, auto_finish: bool = True,
) -> Evaluation:
    _validate_evaluation_fields(team=team, model=model, name=name, strategy=strategy)
    scale_obj = _team_scale(team, scale)
    metrics = _validate_metrics(metrics)
    transformers = _validate_transformers(team, scale_obj, transformers)
    keywords = keywords_clean(keywords).keywords
    _validate_keywords(keywords)
    if reuse_grades not in Evaluation.Reuse.values:
        raise ValidationError({"reuse_grades": f"Use one of {', '.join(Evaluation.Reuse.values)}."})
    evaluation = Evaluation.objects.create(
        team=team, created_by=created_by, model=model, name=name.strip(),
        description=description, scale=scale, strategy=strategy, transformers=transformers,
        tags=_clean_tags(tags), guidelines=guidelines, reuse_grades=reuse_grades,
        show_position=bool(show_position), auto_finish=bool(auto_finish),
    )
    Keyword.objects.bulk_create(_keyword_rows(evaluation, keywords), batch_size=1000)
    _create_metric_configs(evaluation, metrics)
    return evaluation


def _clean_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise ValidationError({"tags": "must be a list of strings"})
    return list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


@transaction.atomic
def evaluation_update(*, evaluation: Evaluation, **changes: Any) -> Evaluation:
    """Change an evaluation. Scale, strategy and transformers freeze at the first start;
    the model and keywords change only while pending, and after the first start keywords
    may be added but not removed (their grades would go with them)."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    allowed = {"name", "description", "model", "scale", "strategy", "transformers", "tags",
               "guidelines", "reuse_grades", "keywords", "metrics", "show_position",
               "auto_finish"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "cannot be changed"})
    if evaluation.status == Evaluation.Status.FINISHED:
        raise ValidationError({"status": "A finished evaluation cannot be changed."})
    for key in ("scale", "strategy", "transformers"):
        if key in changes and changes[key] != getattr(evaluation, key) \
                and evaluation.has_started():
            raise ValidationError({key: "cannot change after the evaluation has started"})
    for key in ("model", "keywords"):
        if key in changes and evaluation.status != Evaluation.Status.PENDING:
            raise ValidationError({key: f"can change only while the evaluation is pending "
                                   f"(it is {evaluation.status})"})
    model = changes.get("model", evaluation.model)
    _validate_evaluation_fields(team=evaluation.team, model=model,
                                name=changes.get("name", evaluation.name),
                                strategy=changes.get("strategy", evaluation.strategy))
    scale = _team_scale(evaluation.team, changes.get("scale", evaluation.scale))
    if "transformers" in changes or "scale" in changes:
        changes["transformers"] = _validate_transformers(
            evaluation.team, scale, changes.get("transformers", evaluation.transformers))
    if "tags" in changes:
        changes["tags"] = _clean_tags(changes["tags"])
    if "reuse_grades" in changes and changes["reuse_grades"] not in Evaluation.Reuse.values:
        raise ValidationError({"reuse_grades": f"Use one of {', '.join(Evaluation.Reuse.values)}."})
    update_fields = []
    for key in ("show_position", "auto_finish"):
        if key in changes and not isinstance(changes[key], bool):
            raise ValidationError({key: "must be true or false"})
    for key in ("name", "description", "model", "scale", "strategy", "transformers", "tags",
                "guidelines", "reuse_grades", "show_position", "auto_finish"):
        if key in changes:
            setattr(evaluation, key, changes[key].strip() if key == "name" else changes[key])
            update_fields.append(key)
    if update_fields:
        evaluation.save(update_fields=update_fields)
    if "keywords" in changes:
        _replace_keywords(evaluation, changes["keywords"])
    if "metrics" in changes:
        _replace_metrics(evaluation, _validate_metrics(changes["metrics"]))
    return evaluation


def _replace_keywords(evaluation: Evaluation, keywords: list[str]) -> None:
    keywords = keywords_clean(keywords).keywords
    _validate_keywords(keywords)
    wanted = {Keyword.normalize(text) for text in keywords}
    existing = {k.normalized_text: k for k in evaluation.keywords.all()}
    if evaluation.has_started():
        removed = [k.text for norm, k in existing.items() if norm not in wanted]
        if removed:
            raise ValidationError({"keywords": f"cannot remove keywords after the first start "
                                   f"({removed[0]!r} …)"})
    else:
        evaluation.keywords.exclude(normalized_text__in=wanted).delete()
    # Positions are kept for existing keywords; new ones go after the last.
    last = evaluation.keywords.aggregate(last=Max("position"))["last"] or 0
    added = [text for text in keywords if Keyword.normalize(text) not in existing]
    Keyword.objects.bulk_create(_keyword_rows(evaluation, added, start=last + 1),
                                batch_size=1000)


def _replace_metrics(evaluation: Evaluation, metrics: list[dict[str, Any]]) -> None:
    current = {(m.code, m.k, json.dumps(m.params, sort_keys=True)): m
               for m in evaluation.metric_configs.all()}
    wanted = [(m["code"], m["k"], json.dumps(m["params"], sort_keys=True)) for m in metrics]
    for key, config in current.items():
        if key not in wanted:
            config.delete()
    for position, (key, item) in enumerate(zip(wanted, metrics, strict=True)):
        config = current.get(key)
        if config is None:
            EvaluationMetric.objects.create(evaluation=evaluation, position=position, **item)
        elif config.position != position:
            config.position = position
            config.save(update_fields=["position"])


def _check_transformers_resolvable(evaluation: Evaluation) -> None:
    """A metric on another scale needs a transformer; a custom scale has no default one."""
    scale = _team_scale(evaluation.team, evaluation.scale)
    if scale.is_builtin:
        return
    transformers = {**scale_provider().transformers(evaluation.team), **evaluation.transformers}
    for config in evaluation.metric_configs.all():
        spec = core.metric_spec(config.code)
        if spec.scale == "graded":
            continue  # graded metrics read an admin-defined scale directly (docs/METRICS.md)
        try:
            core.resolve_transformer(scale, core.SCALES[spec.scale], transformers)
        except core.MetricInputError as error:
            raise ValidationError({"transformers": f"{error} (needed by {config})"}) from None


@transaction.atomic
def evaluation_start(*, evaluation: Evaluation, enqueue: bool = True) -> Evaluation:
    """pending → fetching; fetch tasks for keywords never fetched (or failed) go out after
    commit. With nothing left to fetch the evaluation goes straight to active.

    enqueue=False leaves the fetching to the caller (seed_demo fetches in-process).
    """
    evaluation = Evaluation.objects.select_for_update().select_related(
        "model__endpoint", "team").get(pk=evaluation.pk)
    if evaluation.status != Evaluation.Status.PENDING:
        raise ValidationError({"status": f"Only a pending evaluation can start (it is "
                               f"{evaluation.get_status_display().lower()})."})
    if evaluation.archived_at is not None:
        raise ValidationError({"status": "An archived evaluation cannot start."})
    if not evaluation.keywords.exists():
        raise ValidationError({"keywords": "Add at least one keyword."})
    if not evaluation.metric_configs.exists():
        raise ValidationError({"metrics": "Configure at least one metric."})
    if evaluation.model.archived_at or evaluation.model.endpoint.archived_at:
        raise ValidationError({"model": "The search model or its endpoint is archived."})
    _check_transformers_resolvable(evaluation)
    evaluation.keywords.filter(fetch_status=Keyword.FetchStatus.FAILED).update(
        fetch_status=Keyword.FetchStatus.PENDING, fetch_error="", fetch_claimed_at=None)
    to_fetch = list(evaluation.keywords.filter(fetch_status=Keyword.FetchStatus.PENDING)
                    .order_by("position").values_list("pk", flat=True))
    evaluation.status = Evaluation.Status.FETCHING if to_fetch else Evaluation.Status.ACTIVE
    evaluation.started_at = evaluation.started_at or timezone.now()
    evaluation.save(update_fields=["status", "started_at"])
    if to_fetch and enqueue:
        _enqueue_fetch(evaluation.pk, to_fetch)
    return evaluation


def _enqueue_fetch(evaluation_id: int, keyword_ids: list[int]) -> None:
    from evaluations.tasks import fetch_keywords_dispatch

    size = settings.FETCH_BATCH_SIZE
    for start in range(0, len(keyword_ids), size):
        batch = keyword_ids[start:start + size]
        transaction.on_commit(lambda batch=batch: fetch_keywords_dispatch(evaluation_id, batch))


@transaction.atomic
def evaluation_retry_failed(*, evaluation: Evaluation, enqueue: bool = True) -> Evaluation:
    """Fetch the failed keywords of a started evaluation again: they go back to pending,
    the evaluation to fetching, and their fetch tasks out after commit. Without failed
    keywords nothing changes, so a repeated request is harmless.

    enqueue=False leaves the fetching to the caller (seed_demo fetches in-process)."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if evaluation.status not in (Evaluation.Status.ACTIVE, Evaluation.Status.FETCHING):
        state = evaluation.get_status_display().lower()
        hint = " Start it: that fetches them again." if (
            evaluation.status == Evaluation.Status.PENDING) else ""
        raise ValidationError({"status": "Only an active or fetching evaluation retries failed "
                               f"keywords (it is {state}).{hint}"})
    if evaluation.archived_at is not None:
        raise ValidationError({"status": "An archived evaluation cannot fetch."})
    failed = evaluation.keywords.filter(fetch_status=Keyword.FetchStatus.FAILED)
    to_fetch = list(failed.order_by("position").values_list("pk", flat=True))
    if not to_fetch:
        return evaluation
    failed.update(fetch_status=Keyword.FetchStatus.PENDING, fetch_error="",
                  fetch_claimed_at=None)
    if evaluation.status != Evaluation.Status.FETCHING:
        evaluation.status = Evaluation.Status.FETCHING
        evaluation.save(update_fields=["status"])
    if enqueue:
        _enqueue_fetch(evaluation.pk, to_fetch)
    return evaluation


@transaction.atomic
def evaluation_pause(*, evaluation: Evaluation) -> Evaluation:
    """fetching or active → pending. Fetch tasks still queued find it pending and stop."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if evaluation.status not in (Evaluation.Status.FETCHING, Evaluation.Status.ACTIVE):
        raise ValidationError({"status": f"Only a fetching or active evaluation can pause (it "
                               f"is {evaluation.get_status_display().lower()})."})
    evaluation.status = Evaluation.Status.PENDING
    evaluation.save(update_fields=["status"])
    return evaluation


@transaction.atomic
def evaluation_finish(*, evaluation: Evaluation) -> Evaluation:
    """By hand, or by the recompute when every slot is graded; finishing twice is a no-op."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if evaluation.status == Evaluation.Status.FINISHED:
        return evaluation
    if evaluation.status == Evaluation.Status.FETCHING:
        raise ValidationError({"status": "Wait until fetching ends, or pause, before finishing."})
    if not evaluation.has_started():
        raise ValidationError({"status": "An evaluation that never started cannot finish."})
    evaluation.status = Evaluation.Status.FINISHED
    evaluation.finished_at = timezone.now()
    evaluation.save(update_fields=["status", "finished_at"])
    return evaluation


@transaction.atomic
def evaluation_clone(*, evaluation: Evaluation, created_by: User | None,
                     name: str | None = None) -> Evaluation:
    """A new pending evaluation with the same configuration and keywords, nothing fetched,
    named `name` or "<name> (copy)"."""
    if name is not None and not name.strip():
        raise ValidationError({"name": "The copy needs a name (or none for \"(copy)\")."})
    clone = Evaluation.objects.create(
        team=evaluation.team, model=evaluation.model, created_by=created_by,
        name=(name.strip() if name is not None else f"{evaluation.name} (copy)")[:200],
        description=evaluation.description,
        scale=evaluation.scale, strategy=evaluation.strategy,
        transformers=evaluation.transformers, tags=evaluation.tags,
        guidelines=evaluation.guidelines, reuse_grades=evaluation.reuse_grades,
        auto_finish=evaluation.auto_finish, show_position=evaluation.show_position,
    )
    Keyword.objects.bulk_create(
        _keyword_rows(clone, list(evaluation.keywords.order_by("position")
                                  .values_list("text", flat=True))), batch_size=1000)
    _create_metric_configs(clone, [
        {"code": m.code, "k": m.k, "params": m.params} for m in evaluation.metric_configs.all()
    ])
    return clone


@transaction.atomic
def evaluation_archive(*, evaluation: Evaluation, archived: bool = True) -> Evaluation:
    if evaluation.status == Evaluation.Status.FETCHING:
        raise ValidationError({"status": "Pause the evaluation before archiving it."})
    evaluation.archived_at = (evaluation.archived_at or timezone.now()) if archived else None
    evaluation.save(update_fields=["archived_at"])
    return evaluation


def evaluation_restore(*, evaluation: Evaluation) -> Evaluation:
    return evaluation_archive(evaluation=evaluation, archived=False)


@transaction.atomic
def evaluation_delete(*, evaluation: Evaluation) -> None:
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    if evaluation.status == Evaluation.Status.FETCHING:
        raise ValidationError({"status": "Pause the evaluation before deleting it."})
    evaluation.delete()


# --- fetching ----------------------------------------------------------------------------


def snapshot_depth(*, evaluation: Evaluation) -> int:
    """How many results to keep per keyword: the deepest configured k (nothing below it is
    ever measured, so grading it would be wasted), within FETCH_MAX_RESULTS."""
    deepest = evaluation.metric_configs.aggregate(deepest=Max("k"))["deepest"]
    return min(deepest or DEFAULT_SNAPSHOT_DEPTH, settings.FETCH_MAX_RESULTS)


def keyword_fetch_claim(*, keyword_id: int) -> bool:
    """Claim a keyword for fetching with one conditional UPDATE; False when another task has
    it, it is done, or its evaluation is no longer fetching (paused)."""
    now = timezone.now()
    return Keyword.objects.filter(
        Q(fetch_claimed_at__isnull=True) | Q(fetch_claimed_at__lt=now - FETCH_CLAIM_LEASE),
        pk=keyword_id, fetch_status=Keyword.FetchStatus.PENDING,
        evaluation__status=Evaluation.Status.FETCHING,
    ).update(fetch_claimed_at=now) == 1


@transaction.atomic
def keyword_fetch_store(*, keyword_id: int, result: FetchResult) -> Keyword | None:
    """Store one keyword's results (snapshots + status) or its error, all or nothing.

    Judgments creates the feedback slots from the snapshots_created signal inside this
    transaction, so a snapshot never exists without its slots.
    """
    keyword = Keyword.objects.select_for_update().select_related("evaluation").filter(
        pk=keyword_id, fetch_status=Keyword.FetchStatus.PENDING,
        fetch_claimed_at__isnull=False).first()
    if keyword is None:
        return None  # stored by someone else meanwhile
    keyword.fetch_status_code = result.status_code
    keyword.fetch_duration_ms = result.duration_ms
    keyword.fetched_at = timezone.now()
    keyword.fetch_claimed_at = None
    update_fields = ["fetch_status", "fetch_status_code", "fetch_duration_ms", "fetched_at",
                     "fetch_claimed_at", "fetch_error"]
    if not result.ok:
        keyword.fetch_status = Keyword.FetchStatus.FAILED
        keyword.fetch_error = result.error
        keyword.save(update_fields=update_fields)
        return keyword
    keyword.fetch_status = Keyword.FetchStatus.FETCHED
    keyword.fetch_error = ""
    keyword.save(update_fields=update_fields)
    # Snapshots are only ever written here, together with the FETCHED status; a keyword
    # that already has some (impossible unless rows were edited by hand) keeps them.
    if not keyword.snapshots.exists():
        snapshots = Snapshot.objects.bulk_create([
            Snapshot(keyword=keyword, position=position, doc_id=doc.doc_id, name=doc.name,
                     image=doc.image, fields=doc.fields)
            for position, doc in enumerate(result.documents, start=1)
        ])
        snapshots_created.send(sender=Evaluation, evaluation=keyword.evaluation,
                               keyword=keyword, snapshots=snapshots)
    return keyword


def keywords_fetch_abandon(*, evaluation_id: int, keyword_ids: list[int], error: str) -> int:
    """Record the keywords of a batch that crashed before storing them as failed, claimed
    or not, so the evaluation ends instead of fetching forever; how many were recorded."""
    abandoned = Keyword.objects.filter(
        pk__in=keyword_ids, evaluation_id=evaluation_id,
        fetch_status=Keyword.FetchStatus.PENDING,
    ).update(fetch_status=Keyword.FetchStatus.FAILED, fetch_error=error, fetch_claimed_at=None,
             fetched_at=timezone.now())
    evaluation_fetch_complete(evaluation_id=evaluation_id)
    return abandoned


def keyword_fetch_fail(*, keyword_ids: list[int], error: str) -> None:
    """Record claimed keywords that a task could not finish as failed, never as lost."""
    Keyword.objects.filter(pk__in=keyword_ids, fetch_status=Keyword.FetchStatus.PENDING,
                           fetch_claimed_at__isnull=False).update(
        fetch_status=Keyword.FetchStatus.FAILED, fetch_error=error, fetch_claimed_at=None,
        fetched_at=timezone.now())


def evaluation_fetch_complete(*, evaluation_id: int) -> bool:
    """fetching → active once no keyword waits; safe to call from every task."""
    waiting = Keyword.objects.filter(evaluation_id=evaluation_id,
                                     fetch_status=Keyword.FetchStatus.PENDING).exists()
    if waiting:
        return False
    return Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.Status.FETCHING).update(
        status=Evaluation.Status.ACTIVE) == 1


def keywords_fetch(
    *, evaluation_id: int, keyword_ids: list[int],
    transport: httpx.BaseTransport | None = None,
) -> int:
    """Fetch and store a batch of keywords; returns how many this call stored.

    Not one transaction: each keyword commits on its own, so progress shows while the batch
    runs and a crash loses at most the keywords in flight (their claims expire). Requests
    run in threads, bounded per endpoint; every database write stays on this thread.
    """
    evaluation = Evaluation.objects.select_related("model__endpoint").filter(
        pk=evaluation_id, status=Evaluation.Status.FETCHING).first()
    if evaluation is None:
        return 0
    claimed = {kid: text for kid, text in Keyword.objects.filter(pk__in=keyword_ids)
               .values_list("pk", "text") if keyword_fetch_claim(keyword_id=kid)}
    if not claimed:
        evaluation_fetch_complete(evaluation_id=evaluation_id)
        return 0
    try:
        spec = request_spec_for(evaluation.model, limit=snapshot_depth(evaluation=evaluation))
    except crypto.SecretsUnreadable as error:
        keyword_fetch_fail(keyword_ids=list(claimed), error=str(error))
        evaluation_fetch_complete(evaluation_id=evaluation_id)
        return 0
    stored = 0
    pending = set(claimed)
    # An in-process transport (seed_demo's) answers from this database, so it must run on
    # this thread, whose connection sees the catalog; real HTTP runs in threads.
    workers = 1 if transport is not None else settings.FETCH_CONCURRENCY_PER_ENDPOINT
    try:
        with new_client(timeout_seconds=spec.timeout_seconds, transport=transport) as client:
            for group in _results(spec, claimed, client=client, workers=workers):
                # Results that completed together commit together: one commit instead of
                # many when storing lags behind the network; each keyword stays whole.
                with transaction.atomic():
                    for keyword_id, result in group:
                        keyword_fetch_store(keyword_id=keyword_id, result=result)
                pending.difference_update(keyword_id for keyword_id, _ in group)
                stored += len(group)
    finally:
        if pending:
            keyword_fetch_fail(keyword_ids=list(pending),
                               error="the fetch task stopped before this keyword was stored")
        evaluation_fetch_complete(evaluation_id=evaluation_id)
    return stored


def _results(spec, keywords: dict[int, str], *, client: httpx.Client,
             workers: int) -> Iterator[list[tuple[int, FetchResult]]]:
    """Groups of (keyword id, result), each group what completed since the last one,
    with at most `workers` requests at a time."""
    def guarded(text: str) -> FetchResult:
        try:
            return fetch_keyword_results(spec, text, client=client)
        except Exception as error:  # a bug must cost one keyword, not the batch
            logger.exception("fetching %r failed", text)
            return FetchResult(error=f"internal error: {type(error).__name__}: {error}")

    if workers == 1:
        for keyword_id, text in keywords.items():
            yield [(keyword_id, guarded(text))]
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fetch") as pool:
        futures = {pool.submit(guarded, text): kid for kid, text in keywords.items()}
        waiting = set(futures)
        while waiting:
            done, waiting = wait(waiting, return_when=FIRST_COMPLETED)
            yield [(futures[future], future.result()) for future in done]
