"""Writes for query sets: a team's named, versioned keyword lists.

A list arrives typed, uploaded (parsed by evaluations.services.keywords, the one parser) or
taken from an evaluation, and is cleaned and limited by the same rules as an evaluation's
keywords (keywords_clean, keywords_validate: at least one, at most MAX_KEYWORDS). Editing
the list adds a version only when the cleaned list differs from the current one; a version
is never changed. An evaluation created from a set copies a version's keywords in order and
records the version (Evaluation.query_set_version), so schedules call
`evaluation_create_from_query_set(query_set=…)` to run the current version.
"""

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone

from evaluations.models import Evaluation, Keyword, KeywordSet, QuerySetKeyword, QuerySetVersion
from evaluations.services.configuration import evaluation_create
from evaluations.services.keywords import keywords_clean, keywords_validate
from searchtweak.models import Team, User

# Rows per INSERT: a 100,000-keyword version is a hundred statements, not one huge one.
KEYWORD_BATCH_SIZE = 1000


def _clean_name(*, team: Team, name: str, exclude_pk: int | None = None) -> str:
    name = " ".join(name.split())
    if not name:
        raise ValidationError({"name": "A query set needs a name."})
    if len(name) > KeywordSet._meta.get_field("name").max_length:
        raise ValidationError({"name": "At most 200 characters."})
    clash = KeywordSet.objects.annotate(lower=Lower("name")).filter(
        team=team, archived_at=None, lower=name.lower())
    if exclude_pk is not None:
        clash = clash.exclude(pk=exclude_pk)
    if clash.exists():
        raise ValidationError({"name": f"The team has a query set named {name!r} already."})
    return name


def _clean_keywords(keywords: list[str]) -> list[str]:
    """Cleaned and limited as an evaluation's are; errors on `keywords`."""
    cleaned = keywords_clean(keywords).keywords
    keywords_validate(cleaned)
    return cleaned


def _version_add(*, query_set: KeywordSet, number: int, keywords: list[str],
                 created_by: User | None) -> QuerySetVersion:
    version = QuerySetVersion.objects.create(query_set=query_set, number=number,
                                             keyword_count=len(keywords),
                                             created_by=created_by)
    QuerySetKeyword.objects.bulk_create(
        (QuerySetKeyword(version=version, position=position, text=text,
                         normalized_text=Keyword.normalize(text))
         for position, text in enumerate(keywords, start=1)),
        batch_size=KEYWORD_BATCH_SIZE)
    return version


def version_keywords(version: QuerySetVersion) -> list[str]:
    """The version's keywords in their order."""
    return list(version.keywords.order_by("position").values_list("text", flat=True))


@transaction.atomic
def query_set_create(*, team: Team, created_by: User | None, name: str, keywords: list[str],
                     description: str = "") -> KeywordSet:
    """A query set with version 1 holding `keywords` (lines as typed or read from a file:
    cleaned here). No keyword left is a ValidationError on `keywords`, a name the team uses
    already one on `name`; nothing is written then."""
    name = _clean_name(team=team, name=name)
    keywords = _clean_keywords(keywords)
    query_set = KeywordSet.objects.create(team=team, name=name, description=description.strip(),
                                        created_by=created_by)
    _version_add(query_set=query_set, number=1, keywords=keywords, created_by=created_by)
    return query_set


def query_set_create_from_evaluation(*, evaluation: Evaluation, created_by: User | None,
                                     name: str, description: str = "") -> KeywordSet:
    """A query set in the evaluation's team holding its keywords in their order."""
    keywords = list(evaluation.keywords.order_by("position").values_list("text", flat=True))
    return query_set_create(team=evaluation.team, created_by=created_by, name=name,
                            keywords=keywords, description=description)


@transaction.atomic
def query_set_version_create(*, query_set: KeywordSet, created_by: User | None,
                             keywords: list[str]) -> tuple[QuerySetVersion, bool]:
    """A new current version holding `keywords` (cleaned here), and True; or, when the
    cleaned list equals the current version's (same keywords in the same order), that
    version and False: nothing is written."""
    # The row lock numbers concurrent edits one after the other.
    query_set = KeywordSet.objects.select_for_update().get(pk=query_set.pk)
    if query_set.archived_at is not None:
        raise ValidationError({"query_set": "Restore the query set before editing it."})
    keywords = _clean_keywords(keywords)
    current = query_set.current_version()
    if current is not None and version_keywords(current) == keywords:
        return current, False
    number = current.number + 1 if current is not None else 1
    return _version_add(query_set=query_set, number=number, keywords=keywords,
                        created_by=created_by), True


@transaction.atomic
def query_set_update(*, query_set: KeywordSet, name: str | None = None,
                     description: str | None = None) -> KeywordSet:
    """Rename or describe; the keywords are versions' (query_set_version_create)."""
    query_set = KeywordSet.objects.select_for_update().get(pk=query_set.pk)
    update_fields = []
    if name is not None:
        query_set.name = _clean_name(team=query_set.team, name=name, exclude_pk=query_set.pk)
        update_fields.append("name")
    if description is not None:
        query_set.description = description.strip()
        update_fields.append("description")
    if update_fields:
        query_set.save(update_fields=update_fields)
    return query_set


@transaction.atomic
def query_set_edit(*, query_set: KeywordSet, created_by: User | None, name: str,
                   description: str, keywords: list[str]
                   ) -> tuple[KeywordSet, QuerySetVersion, bool]:
    """The edit page's one save: name, description and keyword list together, all or
    nothing. Returns the set, its current version and whether that version is new."""
    query_set = query_set_update(query_set=query_set, name=name, description=description)
    version, created = query_set_version_create(query_set=query_set, created_by=created_by,
                                                keywords=keywords)
    return query_set, version, created


@transaction.atomic
def query_set_archive(*, query_set: KeywordSet, archived: bool = True) -> KeywordSet:
    """Archive (or with archived=False restore). Archived sets keep their versions (the
    evaluations that ran them still name them) but offer nothing new and free their name;
    restoring one whose name is taken meanwhile is refused on `name`."""
    query_set = KeywordSet.objects.select_for_update().get(pk=query_set.pk)
    if archived == (query_set.archived_at is not None):
        return query_set
    if not archived:
        _clean_name(team=query_set.team, name=query_set.name, exclude_pk=query_set.pk)
    query_set.archived_at = timezone.now() if archived else None
    query_set.save(update_fields=["archived_at"])
    return query_set


def query_set_restore(*, query_set: KeywordSet) -> KeywordSet:
    return query_set_archive(query_set=query_set, archived=False)


@transaction.atomic
def evaluation_create_from_query_set(
    *, query_set: KeywordSet, version: QuerySetVersion | None = None,
    **evaluation_fields: Any,
) -> Evaluation:
    """An evaluation (services.configuration.evaluation_create's fields, but no `keywords`)
    whose keywords are `version`'s (default: the set's current one) in their order, recording
    the version. The set must be the evaluation's team's and not archived (errors on
    `query_set`)."""
    team = evaluation_fields["team"]
    # Read again, locked: the caller's row may predate an archive, and an edit waits.
    query_set = KeywordSet.objects.select_for_update().get(pk=query_set.pk)
    if query_set.team_id != team.pk:
        raise ValidationError({"query_set": "No such query set in this team."})
    if query_set.archived_at is not None:
        raise ValidationError({"query_set": f"{query_set.name} is archived."})
    if version is None:
        version = query_set.current_version()
    elif version.query_set_id != query_set.pk:
        raise ValidationError({"query_set_version": "That version is another query set's."})
    if version is None:
        raise ValidationError({"query_set": f"{query_set.name} has no keywords."})
    return evaluation_create(keywords=version_keywords(version), query_set_version=version,
                             **evaluation_fields)


@transaction.atomic
def evaluation_create_saving_query_set(*, query_set_name: str, keywords: list[str],
                                       **evaluation_fields: Any) -> Evaluation:
    """The typed-keywords path with "save these keywords as a query set named …": the set
    and the evaluation that ran its version 1, or neither. The set's errors are reported
    on `save_as_query_set` (the evaluation's own `name` and `keywords` stay its own)."""
    evaluation = evaluation_create(keywords=keywords, **evaluation_fields)
    try:
        query_set = query_set_create(team=evaluation.team,
                                     created_by=evaluation_fields.get("created_by"),
                                     name=query_set_name, keywords=keywords)
    except ValidationError as error:
        raise ValidationError({"save_as_query_set": error.messages}) from None
    evaluation.query_set_version = query_set.current_version()
    evaluation.save(update_fields=["query_set_version"])
    return evaluation
