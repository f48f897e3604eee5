"""Writes for query sets: a team's named, versioned keyword lists.

A list arrives typed, uploaded (read by evaluations.services.keyword_input, the one
reader) or taken from an evaluation, and is cleaned and limited by the same rules as an
evaluation's keywords (keywords_clean, keywords_validate: at least one, at most
MAX_KEYWORDS). Editing the list adds a version only when the cleaned list differs from the
current one; a version is never changed. An evaluation created from a set copies a
version's keywords in order and records the version (Evaluation.query_set_version), so
schedules call `evaluation_create_from_query_set(query_set=…)` to run the current version.

Keywords carry their weight and tags (services.keywords) into every version and every
evaluation made from one, and back when an evaluation's keywords are saved as a set. With
traffic segments on, a version's keywords are tagged head, torso or tail by their weights
(`traffic_tagged`) when it is written: a change of weights or of the cut points is a new
version, and what is stored is plain tags that everything reading tags treats alike.
"""

from dataclasses import replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone

from audit.models import Action
from audit.services import audit_object, fields_of
from evaluations.models import Evaluation, Keyword, KeywordSet, QuerySetKeyword, QuerySetVersion
from evaluations.selectors import evaluation_keyword_entries
from evaluations.services.configuration import evaluation_create
from evaluations.services.keywords import (
    TRAFFIC_TAGS,
    KeywordEntry,
    keywords_clean,
    keywords_validate,
)
from metrics_engine.errors import MetricInputError
from metrics_engine.weighted import traffic_segments, validate_cuts
from searchtweak.models import Team, User

Keywords = list[str | KeywordEntry | dict[str, Any]]

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


def _clean_keywords(keywords: Keywords, *, cuts: tuple[int, int] | None
                    ) -> list[KeywordEntry]:
    """Cleaned and limited as an evaluation's are (errors on `keywords`), and tagged with
    their traffic segments when `cuts` are given."""
    cleaned = keywords_clean(keywords).entries
    keywords_validate(cleaned)
    return traffic_tagged(cleaned, cuts) if cuts is not None else cleaned


def traffic_tagged(entries: list[KeywordEntry], cuts: tuple[int, int]) -> list[KeywordEntry]:
    """The entries with each one's traffic segment (head, torso or tail by
    metrics_engine.weighted.traffic_segments over their weights, in their order) as its
    only traffic tag: a head, torso or tail tag they carried is replaced."""
    segments = traffic_segments([entry.weight for entry in entries], cuts)
    return [replace(entry, tags=tuple(sorted(
        {*(tag for tag in entry.tags if tag not in TRAFFIC_TAGS), segment})))
        for entry, segment in zip(entries, segments, strict=True)]


def traffic_untagged(entries: list[KeywordEntry]) -> list[KeywordEntry]:
    """The entries without head, torso or tail tags."""
    return [replace(entry, tags=tuple(tag for tag in entry.tags if tag not in TRAFFIC_TAGS))
            for entry in entries]


def _cuts_clean(*, head_cut: Any, torso_cut: Any) -> tuple[int, int]:
    """validate_cuts' rule, its error on the field at fault."""
    try:
        return validate_cuts([head_cut, torso_cut])
    except MetricInputError:
        pass
    for name, cut in (("traffic_head_cut", head_cut), ("traffic_torso_cut", torso_cut)):
        if isinstance(cut, bool) or not isinstance(cut, int) or not 0 <= cut <= 100:
            raise ValidationError({name: "A cut point is a whole percentage from 0 to 100."})
    raise ValidationError({"traffic_torso_cut": f"The torso must end above where the head "
                                                f"ends ({head_cut} %)."})


def _version_add(*, query_set: KeywordSet, number: int, keywords: list[KeywordEntry],
                 created_by: User | None) -> QuerySetVersion:
    version = QuerySetVersion.objects.create(query_set=query_set, number=number,
                                             keyword_count=len(keywords),
                                             created_by=created_by)
    QuerySetKeyword.objects.bulk_create(
        (QuerySetKeyword(version=version, position=position, text=entry.text,
                         normalized_text=Keyword.normalize(entry.text), weight=entry.weight,
                         tags=list(entry.tags))
         for position, entry in enumerate(keywords, start=1)),
        batch_size=KEYWORD_BATCH_SIZE)
    return version


def version_keywords(version: QuerySetVersion) -> list[str]:
    """The version's keywords in their order."""
    return list(version.keywords.order_by("position").values_list("text", flat=True))


def version_entries(version: QuerySetVersion) -> list[KeywordEntry]:
    """The version's keywords in their order, with their weights and tags."""
    return [KeywordEntry(text, weight, tuple(tags)) for text, weight, tags in
            version.keywords.order_by("position").values_list("text", "weight", "tags")]


def keywords_as_typed(query_set: KeywordSet, version: QuerySetVersion) -> list[KeywordEntry]:
    """The version's keywords as a lead edits them: without the traffic tags when the set
    writes those itself."""
    entries = version_entries(version)
    return traffic_untagged(entries) if query_set.traffic_segments else entries


@transaction.atomic
def query_set_create(*, team: Team, created_by: User | None, name: str, keywords: Keywords,
                     description: str = "", traffic_segments: bool = False,
                     traffic_head_cut: int = 50, traffic_torso_cut: int = 80) -> KeywordSet:
    """A query set with version 1 holding `keywords` (as typed or read from a file, plain
    or with weights and tags: cleaned here). No keyword left is a ValidationError on
    `keywords`, a name the team uses already one on `name`, cut points out of order one on
    the cut at fault; nothing is written then."""
    name = _clean_name(team=team, name=name)
    cuts = _cuts_clean(head_cut=traffic_head_cut, torso_cut=traffic_torso_cut)
    keywords = _clean_keywords(keywords, cuts=cuts if traffic_segments else None)
    query_set = KeywordSet.objects.create(
        team=team, name=name, description=description.strip(), created_by=created_by,
        traffic_segments=bool(traffic_segments), traffic_head_cut=cuts[0],
        traffic_torso_cut=cuts[1])
    _version_add(query_set=query_set, number=1, keywords=keywords, created_by=created_by)
    audit_object(action=Action.QUERY_SET_CREATED, instance=query_set, object_type="query_set",
                 actor=created_by, after={"name": query_set.name, "version": 1,
                                          "keyword_count": len(keywords)})
    return query_set


def query_set_create_from_evaluation(*, evaluation: Evaluation, created_by: User | None,
                                     name: str, description: str = "") -> KeywordSet:
    """A query set in the evaluation's team holding its keywords in their order, with
    their weights and tags."""
    return query_set_create(team=evaluation.team, created_by=created_by, name=name,
                            keywords=evaluation_keyword_entries(evaluation=evaluation),
                            description=description)


@transaction.atomic
def query_set_version_create(*, query_set: KeywordSet, created_by: User | None,
                             keywords: Keywords) -> tuple[QuerySetVersion, bool]:
    """A new current version holding `keywords` (cleaned here, and tagged with their
    traffic segments when the set has them on), and True; or, when that list equals the
    current version's (same keywords, weights and tags in the same order), that version
    and False: nothing is written."""
    version, created = _version_create(query_set=query_set, created_by=created_by,
                                       keywords=keywords)
    if created:
        audit_object(action=Action.QUERY_SET_CHANGED, instance=query_set,
                     object_type="query_set", actor=created_by,
                     before={"version": version.number - 1}, after={"version": version.number})
    return version, created


def _version_create(*, query_set: KeywordSet, created_by: User | None,
                    keywords: Keywords) -> tuple[QuerySetVersion, bool]:
    # The row lock numbers concurrent edits one after the other.
    query_set = KeywordSet.objects.select_for_update().get(pk=query_set.pk)
    if query_set.archived_at is not None:
        raise ValidationError({"query_set": "Restore the query set before editing it."})
    keywords = _clean_keywords(keywords, cuts=query_set.traffic_cuts())
    current = query_set.current_version()
    if current is not None and version_entries(current) == keywords:
        return current, False
    number = current.number + 1 if current is not None else 1
    return _version_add(query_set=query_set, number=number, keywords=keywords,
                        created_by=created_by), True


def _settings_save(*, query_set: KeywordSet, name: str | None, description: str | None,
                   traffic: dict[str, Any]) -> tuple[KeywordSet, tuple[int, int] | None]:
    """The set's own fields saved (its row locked), and its traffic cuts before
    (KeywordSet.traffic_cuts)."""
    query_set = KeywordSet.objects.select_for_update().get(pk=query_set.pk)
    cuts_before = query_set.traffic_cuts()
    update_fields = []
    if name is not None:
        query_set.name = _clean_name(team=query_set.team, name=name, exclude_pk=query_set.pk)
        update_fields.append("name")
    if description is not None:
        query_set.description = description.strip()
        update_fields.append("description")
    traffic = {key: value for key, value in traffic.items() if value is not None}
    if traffic:
        if query_set.archived_at is not None:
            raise ValidationError({"query_set": "Restore the query set before editing it."})
        query_set.traffic_head_cut, query_set.traffic_torso_cut = _cuts_clean(
            head_cut=traffic.get("traffic_head_cut", query_set.traffic_head_cut),
            torso_cut=traffic.get("traffic_torso_cut", query_set.traffic_torso_cut))
        query_set.traffic_segments = bool(traffic.get("traffic_segments",
                                                      query_set.traffic_segments))
        update_fields += ["traffic_segments", "traffic_head_cut", "traffic_torso_cut"]
    if update_fields:
        query_set.save(update_fields=update_fields)
    return query_set, cuts_before


@transaction.atomic
def query_set_update(*, query_set: KeywordSet, name: str | None = None,
                     description: str | None = None, traffic_segments: bool | None = None,
                     traffic_head_cut: int | None = None, traffic_torso_cut: int | None = None,
                     created_by: User | None = None) -> KeywordSet:
    """Rename, describe, or turn traffic segments on, off or to other cut points. The
    keywords are versions' (query_set_version_create): a traffic change that retags the
    current keywords writes them again as a new version (by `created_by`); turning the
    segments off drops their head, torso and tail tags."""
    before = _settings_of(query_set)
    query_set, cuts_before = _settings_save(
        query_set=query_set, name=name, description=description, traffic={
            "traffic_segments": traffic_segments, "traffic_head_cut": traffic_head_cut,
            "traffic_torso_cut": traffic_torso_cut})
    current = query_set.current_version()
    if current is not None and query_set.traffic_cuts() != cuts_before:
        entries = version_entries(current)
        _version_create(
            query_set=query_set, created_by=created_by,
            keywords=entries if query_set.traffic_segments else traffic_untagged(entries))
    audit_object(action=Action.QUERY_SET_CHANGED, instance=query_set, object_type="query_set",
                 actor=created_by, before=before, after=_settings_of(query_set))
    return query_set


@transaction.atomic
def query_set_edit(*, query_set: KeywordSet, created_by: User | None, name: str,
                   description: str, keywords: Keywords, traffic_segments: bool | None = None,
                   traffic_head_cut: int | None = None, traffic_torso_cut: int | None = None,
                   ) -> tuple[KeywordSet, QuerySetVersion, bool]:
    """The edit page's one save: name, description, traffic segments (None: unchanged) and
    keyword list together, all or nothing. Returns the set, its current version and
    whether that version is new. The page shows a set's keywords without their traffic
    tags when it has the segments on (keywords_as_typed), so what arrives here is the
    lead's own."""
    before = _settings_of(query_set)
    query_set, _ = _settings_save(
        query_set=query_set, name=name, description=description, traffic={
            "traffic_segments": traffic_segments, "traffic_head_cut": traffic_head_cut,
            "traffic_torso_cut": traffic_torso_cut})
    version, created = _version_create(query_set=query_set, created_by=created_by,
                                       keywords=keywords)
    after = _settings_of(query_set)
    if created:
        before["version"], after["version"] = version.number - 1, version.number
    audit_object(action=Action.QUERY_SET_CHANGED, instance=query_set, object_type="query_set",
                 actor=created_by, before=before, after=after)
    return query_set, version, created


def _settings_of(query_set: KeywordSet) -> dict[str, Any]:
    return fields_of(query_set, only=("name", "description", "traffic_segments",
                                      "traffic_head_cut", "traffic_torso_cut"))


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
    audit_object(action=Action.QUERY_SET_CHANGED, instance=query_set, object_type="query_set",
                 before={"archived": not archived}, after={"archived": archived})
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
    return evaluation_create(keywords=version_entries(version), query_set_version=version,
                             **evaluation_fields)


@transaction.atomic
def evaluation_create_saving_query_set(*, query_set_name: str, keywords: Keywords,
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
