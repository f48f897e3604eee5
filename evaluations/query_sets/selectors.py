"""Reads for the query set pages and API, and the query set's access function.

Who may do what: every member of the team reads a query set (its keywords are the ones
graders see on an evaluation's page anyway); leads and above create, edit, archive and
restore them, as they create evaluations (searchtweak.access decides, WRITE_ROLE says).
"""

from dataclasses import dataclass

from django.db.models import Count, Max, OuterRef, QuerySet, Subquery

from evaluations.models import KeywordSet, QuerySetKeyword, QuerySetVersion
from searchtweak import access
from searchtweak.models import Role, User

WRITE_ROLE = Role.LEAD


def query_set_get_for_user(*, user: User, query_set_id: int,
                           minimum_role: str = Role.GRADER) -> KeywordSet:
    return access.row_get_for_user(KeywordSet.objects.select_related("team"), user=user,
                                   pk=query_set_id, minimum_role=minimum_role,
                                   what="query set")


def with_current(query_sets: QuerySet[KeywordSet]) -> QuerySet[KeywordSet]:
    """Annotated with `version_count`, `current_number` and `current_keyword_count`."""
    current = QuerySetVersion.objects.filter(query_set=OuterRef("pk")).order_by("-number")
    return query_sets.annotate(
        version_count=Count("versions"), current_number=Max("versions__number"),
        current_keyword_count=Subquery(current.values("keyword_count")[:1]),
    )


def query_sets_of_team(*, team_id: int, archived: bool = False) -> QuerySet[KeywordSet]:
    """The team's query sets in use, or its archived ones, by name."""
    return with_current(KeywordSet.objects.filter(
        team_id=team_id, archived_at__isnull=not archived)).order_by("name", "id")


def query_sets_for_choice(*, team_id: int) -> QuerySet[KeywordSet]:
    """What the evaluation form offers: the team's sets in use."""
    return KeywordSet.objects.filter(team_id=team_id, archived_at=None).order_by("name")


def versions_of(query_set: KeywordSet) -> list[QuerySetVersion]:
    """Newest first, creators loaded."""
    return list(query_set.versions.select_related("created_by").order_by("-number"))


def version_keywords(version: QuerySetVersion) -> QuerySet[QuerySetKeyword]:
    return version.keywords.order_by("position")


@dataclass(frozen=True)
class VersionDiff:
    """What a version changed against the one before it (by normalized text)."""

    previous_number: int
    added: int
    removed: int


def version_diff(version: QuerySetVersion) -> VersionDiff | None:
    """Two COUNT queries whatever the list's length; None for version 1."""
    previous = QuerySetVersion.objects.filter(query_set_id=version.query_set_id,
                                              number__lt=version.number) \
        .order_by("-number").first()
    if previous is None:
        return None
    texts = QuerySetKeyword.objects.filter(version=previous).values("normalized_text")
    added = version.keywords.exclude(normalized_text__in=texts).count()
    current_texts = QuerySetKeyword.objects.filter(version=version).values("normalized_text")
    removed = previous.keywords.exclude(normalized_text__in=current_texts).count()
    return VersionDiff(previous_number=previous.number, added=added, removed=removed)
