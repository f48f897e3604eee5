"""Writes of judge administration: create, update, delete (deactivate when used) a judge
with the service account its grades carry. The Test action is judges.trial_calls.

A judge grades through its own User (judges.models.Judge.user): ``is_judge``, never able
to log in (inactive, unusable password), a grader of the judge's team, so it fills slots
exactly as a person does. The account is made with the judge and kept for as long as
anything it graded is.
"""

import logging
import math
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from audit.models import Action
from audit.services import audit_object, fields_of
from evaluations.endpoints.services import HTTP_URL_PROBLEM, LIMIT_MAXIMUMS, http_url_problem
from judges import budgets, calls, runs
from judges.core import providers
from judges.core.prompts import MAX_BATCH_SIZE, PromptError, check_template, default_template
from judges.models import CALLED_PROVIDERS, Judge, JudgeRun
from judges.secrets import encrypt_api_key
from judgments import scales as scale_lookup
from judgments.grader_tags import normalize_tags
from judgments.models import FeedbackSlot
from searchtweak.models import Membership, Role, Team, User

logger = logging.getLogger(__name__)

DEFAULT_BASE_URLS = {Judge.Provider.OPENAI: providers.OPENAI_BASE_URL,
                     Judge.Provider.ANTHROPIC: providers.ANTHROPIC_BASE_URL,
                     Judge.Provider.OLLAMA: providers.OLLAMA_BASE_URL}
# A model answer can take a while; beyond this a worker is better given back.
MAX_TIMEOUT_SECONDS = 600.0
MAX_RETRIES = 10
MAX_TEMPLATE_CHARS = 20_000
MAX_PRICE = Decimal("999999.9999")
SETTINGS = ("name", "provider", "base_url", "model", "prompt_templates", "batch_size",
            "parameters", "tags", "is_active", "timeout_seconds", "max_retries",
            "max_concurrent_requests", "requests_per_minute", "price_in_per_million",
            "price_out_per_million", "price_currency", "allow_cross_origin_redirects",
            "send_images")
# The columns a judge that grades in-process uses (judge_audited).
LOCAL_AUDITED = ("name", "provider", "model", "tags", "is_active", "user", "counts")
LOCAL_EDITED_ELSEWHERE = ("A clicks grader is changed on its own edit page or with PATCH "
                          "/api/v1/click-graders/<judge id>/.")


def _whole(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def json_problem(value: Any) -> str:
    """Why a JSON value cannot be stored (PostgreSQL's jsonb takes no NaN and no U+0000)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a number JSON can hold"
    if isinstance(value, str) and "\x00" in value:
        return "text may not contain a NUL character (U+0000)"
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, item in items:
        problem = json_problem(key) or json_problem(item)
        if problem:
            return problem
    return ""


def _price(value: Any, problems: dict[str, str], name: str) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        price = Decimal(str(value)).quantize(Decimal("0.0001"))
    except (InvalidOperation, ValueError):
        price = None
    if price is None or not price.is_finite() or not 0 <= price <= MAX_PRICE:
        problems[name] = f"A price per million tokens from 0 to {MAX_PRICE}, or empty."
        return None
    return price


def _clean_templates(team: Team, templates: Any, problems: dict[str, str]) -> dict[str, str]:
    """Only the templates that differ from the shipped default are stored: a judge left at
    the default follows the shipped wording when it improves."""
    if not isinstance(templates, dict):
        problems["prompt_templates"] = "must be an object {scale code: template}"
        return {}
    stored = {}
    for code, template in templates.items():
        grade_scale = scale_lookup.scale_for_team(team_id=team.pk, code=str(code))
        key = f"prompt_templates.{code}"
        if grade_scale is None:
            problems[key] = f"the team has no scale {code!r}"
            continue
        if template is None or (isinstance(template, str) and not template.strip()):
            continue  # empty: the shipped default
        if not isinstance(template, str) or len(template) > MAX_TEMPLATE_CHARS \
                or "\x00" in template:
            problems[key] = (f"{grade_scale.name} ({code}): a template is text of at most "
                             f"{MAX_TEMPLATE_CHARS} characters")
            continue
        template = template.replace("\r\n", "\n")
        try:
            check_template(template)
        except PromptError as error:
            problems[key] = f"{grade_scale.name} ({code}): {error}"
            continue
        if template.strip() != default_template(grade_scale.scale).strip():
            stored[str(code)] = template
    return stored


def judge_name_problem(*, team: Team, name: Any, judge: Judge | None = None) -> str:
    """Why `name` (stripped already) cannot name a judge of `team` other than `judge`;
    empty when it can."""
    if not isinstance(name, str) or not name or len(name) > 100 or "\x00" in name:
        return "A judge needs a name of at most 100 characters."
    if Judge.objects.filter(team=team, name=name).exclude(
            pk=judge.pk if judge else None).exists():
        return f"The team already has a judge named {name!r}."
    return ""


def _clean_settings(*, team: Team, values: dict[str, Any], judge: Judge | None = None
                    ) -> dict[str, Any]:
    """The settings as stored; every bad one named in one ValidationError."""
    problems: dict[str, str] = {}
    clean = dict(values)
    name = values["name"].strip() if isinstance(values["name"], str) else ""
    if problem := judge_name_problem(team=team, name=name, judge=judge):
        problems["name"] = problem
    clean["name"] = name
    provider = values["provider"]
    if provider not in CALLED_PROVIDERS:
        problems["provider"] = f"Use one of {', '.join(CALLED_PROVIDERS)}." + (
            " A clicks grader is made from a behaviour source, on its own page."
            if provider == Judge.Provider.CLICKS else "")
    base_url = (values["base_url"] or "").strip() if isinstance(values["base_url"], str | None) \
        else None
    if base_url == "" and provider in DEFAULT_BASE_URLS:
        base_url = DEFAULT_BASE_URLS[provider]
    problem = http_url_problem(base_url) if isinstance(base_url, str) else HTTP_URL_PROBLEM
    if problem and problem != HTTP_URL_PROBLEM:
        problems["base_url"] = problem  # what the HTTP client cannot parse, said as it is
    elif base_url is None or problem or len(base_url) > 500 \
            or any(ord(char) < 32 or ord(char) == 127 for char in base_url):
        problems["base_url"] = "Enter an http:// or https:// URL (or leave it empty for the " \
                               "provider's own)."
    clean["base_url"] = base_url
    model = values["model"].strip() if isinstance(values["model"], str) else ""
    if not model or len(model) > 200 or "\x00" in model:
        problems["model"] = "Name the model (at most 200 characters), e.g. gpt-4o-mini."
    clean["model"] = model
    if not _whole(values["batch_size"], 1, MAX_BATCH_SIZE):
        problems["batch_size"] = f"A whole number of documents per call from 1 to " \
                                 f"{MAX_BATCH_SIZE}."
    clean["prompt_templates"] = _clean_templates(team, values["prompt_templates"], problems)
    parameters = values["parameters"]
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        problems["parameters"] = 'must be a JSON object, e.g. {"temperature": 0}'
    elif json_problem(parameters):
        problems["parameters"] = json_problem(parameters)
    elif "provider" not in problems and "model" not in problems:
        try:  # the provider decides what it accepts, as it will on every call
            # The probe checks the parameters, not the URL (named above when bad): a URL
            # httpx cannot even parse would crash it, so a bad one is replaced here.
            probe_url = base_url if "base_url" not in problems else "http://127.0.0.1/"
            probe = Judge(provider=provider, base_url=probe_url or "", model=model)
            calls.provider_for(probe).build_request(system="", user="", schema={},
                                                    parameters=parameters, api_key=None)
        except providers.ProviderConfigError as error:
            problems["parameters"] = str(error)
    clean["parameters"] = parameters
    tags = values["tags"]
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        problems["tags"] = "must be a list of words"
    else:
        clean["tags"] = normalize_tags(tags)
    clean["is_active"] = bool(values["is_active"])
    clean["allow_cross_origin_redirects"] = bool(values["allow_cross_origin_redirects"])
    clean["send_images"] = bool(values["send_images"])
    timeout = values["timeout_seconds"]
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) \
            or not 0 < timeout <= MAX_TIMEOUT_SECONDS:
        problems["timeout_seconds"] = f"Between 0 and {MAX_TIMEOUT_SECONDS:g} seconds."
    else:
        clean["timeout_seconds"] = float(timeout)
    if not _whole(values["max_retries"], 0, MAX_RETRIES):
        problems["max_retries"] = f"A whole number from 0 to {MAX_RETRIES}."
    for limit in ("max_concurrent_requests", "requests_per_minute"):
        value = values[limit]
        if (value is not None or limit == "max_concurrent_requests") \
                and not _whole(value, 1, LIMIT_MAXIMUMS[limit]):
            problems[limit] = f"A whole number from 1 to {LIMIT_MAXIMUMS[limit]}" + (
                ", or empty for no limit." if limit == "requests_per_minute" else ".")
    for price in ("price_in_per_million", "price_out_per_million"):
        clean[price] = _price(values[price], problems, price)
    currency = budgets.currency_code(values["price_currency"])
    if currency is None:
        problems["price_currency"] = budgets.CURRENCY_PROBLEM
    else:
        clean["price_currency"] = currency
    if problems:
        raise ValidationError(problems)
    return clean


def _account_username(team: Team, name: str) -> str:
    base = f"judge.{team.pk}.{slugify(name)[:100] or 'judge'}"
    username, number = base, 1
    while User.objects.filter(username=username).exists():
        number += 1
        username = f"{base}-{number}"
    return username


def _judge_account(team: Team, name: str) -> User:
    account = User(username=_account_username(team, name), is_judge=True, is_active=False,
                   first_name=name[:150])
    account.set_unusable_password()
    account.save()
    Membership.objects.create(team=team, user=account, role=Role.GRADER)
    return account


def judge_audited(judge: Judge, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """What an audit record says of a judge: every column of a called judge; of one that
    grades in-process, only the columns it uses (LOCAL_AUDITED) and the settings its app
    keeps beside it (`settings`, JSON values), none of the HTTP ones it has no use for."""
    if judge.provider in CALLED_PROVIDERS:
        return fields_of(judge)
    return {**fields_of(judge, only=LOCAL_AUDITED), **(settings or {})}


@transaction.atomic
def judge_local_create(*, team: Team, by: User | None, name: str, provider: str, model: str,
                       tags: list[str] | None = None, settings: dict[str, Any] | None = None
                       ) -> Judge:
    """A judge that grades in-process (not one of CALLED_PROVIDERS: no URL, no key, no
    prompt), with its service account; the app that owns the provider keeps its settings
    beside it and passes them (`settings`, JSON values) for the audit record.
    ValidationError naming the field for a taken name or a called provider."""
    name = name.strip() if isinstance(name, str) else ""
    if problem := judge_name_problem(team=team, name=name):
        raise ValidationError({"name": problem})
    if provider in CALLED_PROVIDERS or provider not in Judge.Provider.values:
        raise ValidationError({"provider": f"{provider!r} is not an in-process grader."})
    judge = Judge.objects.create(team=team, user=_judge_account(team, name), name=name,
                                 provider=provider, base_url="", model=model,
                                 tags=normalize_tags(tags or []))
    audit_object(action=Action.JUDGE_CREATED, instance=judge, object_type="judge", actor=by,
                 after=judge_audited(judge, settings))
    logger.info("judge %s (%s, %s) created in team %s by %s", judge.pk, judge.name, provider,
                team.pk, getattr(by, "pk", None))
    return judge


@transaction.atomic
def judge_local_update(*, judge: Judge, by: User | None, name: str, is_active: bool,
                       tags: list[str], model: str, settings_before: dict[str, Any],
                       settings_after: dict[str, Any]) -> Judge:
    """Change the own columns of a judge that grades in-process, for the app that keeps its
    settings and changed them in the caller's transaction: `settings_before` and
    `settings_after` (JSON values) go into the change's one audit record. Renaming keeps
    the account; making it inactive pauses its running runs. ValidationError naming the
    field; the caller's transaction then saves nothing."""
    judge = Judge.objects.select_for_update(of=("self",)).select_related("user").get(
        pk=judge.pk)
    before = judge_audited(judge, settings_before)
    name = name.strip() if isinstance(name, str) else ""
    problems = {}
    if problem := judge_name_problem(team=judge.team, name=name, judge=judge):
        problems["name"] = problem
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        problems["tags"] = "must be a list of words"
    if problems:
        raise ValidationError(problems)
    was_active = judge.is_active
    judge.name, judge.is_active, judge.tags, judge.model = (
        name, bool(is_active), normalize_tags(tags), model)
    return _judge_changed(judge, by=by, before=before, was_active=was_active,
                          update_fields=["name", "is_active", "tags", "model"],
                          settings=settings_after)


def _pause_runs(judge: Judge) -> None:
    """An inactive judge stops working: its running runs pause (resuming needs it active)."""
    for run in judge.runs.filter(status=JudgeRun.Status.RUNNING):
        runs.run_pause(run=run)


@transaction.atomic
def judge_create(
    *, team: Team, by: User | None, name: str, provider: str, model: str, base_url: str = "",
    api_key: str = "", prompt_templates: dict[str, str] | None = None, batch_size: int = 5,
    parameters: dict[str, Any] | None = None, tags: list[str] | None = None,
    is_active: bool = True, timeout_seconds: float = 60.0, max_retries: int = 3,
    max_concurrent_requests: int = 16, requests_per_minute: int | None = None,
    price_in_per_million: Decimal | None = None, price_out_per_million: Decimal | None = None,
    price_currency: str = "USD", allow_cross_origin_redirects: bool = False,
    send_images: bool = False,
) -> Judge:
    """A judge and its service account (inactive, no password, a grader of ``team``).
    An empty ``base_url`` means the provider's own; the key is stored encrypted."""
    values = {key: value for key, value in locals().items() if key in SETTINGS}
    values["prompt_templates"] = prompt_templates or {}
    clean = _clean_settings(team=team, values=values)
    if not isinstance(api_key, str) or "\x00" in api_key:
        raise ValidationError({"api_key": "must be text"})
    judge = Judge.objects.create(team=team, user=_judge_account(team, clean["name"]), **clean,
                                 api_key_encrypted=encrypt_api_key(api_key.strip()))
    audit_object(action=Action.JUDGE_CREATED, instance=judge, object_type="judge", actor=by,
                 after=fields_of(judge))
    logger.info("judge %s (%s) created in team %s by %s", judge.pk, judge.name, team.pk,
                getattr(by, "pk", None))
    return judge


@transaction.atomic
def judge_update(*, judge: Judge, by: User | None, **changes: Any) -> Judge:
    """Change any setting of judge_create (of a called judge: one that grades in-process is
    its app's to change, judge_local_update). An empty ``api_key`` keeps the stored key, a
    new one replaces it, ``clear_api_key=True`` (with no new key) removes it. Renaming
    keeps the account (its grades stay its own). Making a judge inactive pauses its
    running runs."""
    unknown = set(changes) - set(SETTINGS) - {"api_key", "clear_api_key"}
    if unknown:
        raise ValidationError({sorted(unknown)[0]: "cannot be changed"})
    judge = Judge.objects.select_for_update().get(pk=judge.pk)
    if judge.provider not in CALLED_PROVIDERS:
        raise ValidationError({"provider": LOCAL_EDITED_ELSEWHERE})
    before = judge_audited(judge)
    values = {key: changes.get(key, getattr(judge, key)) for key in SETTINGS}
    if "prompt_templates" not in changes:
        values["prompt_templates"] = dict(judge.prompt_templates or {})
    clean = _clean_settings(team=judge.team, values=values, judge=judge)
    api_key = changes.get("api_key") or ""
    if not isinstance(api_key, str) or "\x00" in api_key:
        raise ValidationError({"api_key": "must be text"})
    update_fields = list(SETTINGS)
    if api_key.strip():
        judge.api_key_encrypted = encrypt_api_key(api_key.strip())
        update_fields.append("api_key_encrypted")
    elif changes.get("clear_api_key"):
        judge.api_key_encrypted = ""
        update_fields.append("api_key_encrypted")
    was_active = judge.is_active
    for key, value in clean.items():
        setattr(judge, key, value)
    return _judge_changed(judge, by=by, before=before, was_active=was_active,
                          update_fields=update_fields)


def _judge_changed(judge: Judge, *, by: User | None, before: dict[str, Any], was_active: bool,
                   update_fields: list[str], settings: dict[str, Any] | None = None) -> Judge:
    """Every judge edit ends here: save the columns set on `judge`, keep its account's name,
    pause its running runs when it was made inactive, and record the change once."""
    judge.updated_at = timezone.now()
    judge.save(update_fields=[*update_fields, "updated_at"])
    if judge.user.first_name != judge.name[:150]:
        judge.user.first_name = judge.name[:150]
        judge.user.save(update_fields=["first_name"])
    if was_active and not judge.is_active:
        _pause_runs(judge)
    audit_object(action=Action.JUDGE_CHANGED, instance=judge, object_type="judge", actor=by,
                 before=before, after=judge_audited(judge, settings))
    logger.info("judge %s (%s) changed by %s", judge.pk, judge.name, getattr(by, "pk", None))
    return judge


def judge_is_used(*, judge: Judge) -> bool:
    """Whether anything carries the judge's identity: a run, or a slot it holds or graded."""
    return judge.runs.exists() or FeedbackSlot.objects.filter(
        Q(user_id=judge.user_id) | Q(graded_by_id=judge.user_id)).exists()


@transaction.atomic
def judge_delete(*, judge: Judge) -> bool:
    """Delete an unused judge with its account (and its Test calls); True when deleted.

    A judge that has runs or any slot (held or graded) is only deactivated, and False is
    returned: its grades must keep saying who gave them, and its runs and calls stay for
    the logs, calibration and cost. Deactivating pauses its running runs; it can be made
    active again on its edit page.
    """
    if judge_is_used(judge=judge):
        if judge.is_active:
            judge.is_active, judge.updated_at = False, timezone.now()
            judge.save(update_fields=["is_active", "updated_at"])
            _pause_runs(judge)
            audit_object(action=Action.JUDGE_CHANGED, instance=judge, object_type="judge",
                         before={"is_active": True}, after={"is_active": False})
        return False
    audit_object(action=Action.JUDGE_DELETED, instance=judge, object_type="judge",
                 before=judge_audited(judge))
    account = judge.user
    judge.delete()
    account.delete()  # its membership goes with it
    return True
