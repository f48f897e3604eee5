"""The tags an admin gives a team's graders, which route slots to them
(judgments.queue_selectors.routes_to)."""

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from judgments.models import GraderTags
from searchtweak.models import Team, User


def normalize_tags(tags: Iterable[str]) -> list[str]:
    return sorted({tag.strip().lower() for tag in tags if tag and tag.strip()})


@transaction.atomic
def grader_tags_set(*, team: Team, user: User, tags: Iterable[str]) -> GraderTags:
    if not user.memberships.filter(team=team).exists():
        raise ValidationError({"user": "Not a member of this team."})
    row, _ = GraderTags.objects.update_or_create(
        team=team, user=user, defaults={"tags": normalize_tags(tags), "updated_at": timezone.now()}
    )
    return row
