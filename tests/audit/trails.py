"""A team's small audit trail, for the tests of the pages and the API that read it: a
role change on 1 March, an export by the owner on 2 March, and another team's event."""

from datetime import UTC, datetime

import time_machine

from audit.models import Action
from audit.services import audit_record
from searchtweak.models import Membership, Role
from searchtweak.services import membership_change_role
from tests.searchtweak.factories import TeamFactory, member


def two_day_trail(*, export_format: str = "csv"):
    """(team, owner, grader) of team Acme with its two events, and one event of another
    team that neither its page nor its API may show."""
    team = TeamFactory(name="Acme")
    owner = member(team, Role.OWNER, "owner")
    grader = member(team, Role.GRADER, "grader")
    with time_machine.travel(datetime(2026, 3, 1, 9, 0, tzinfo=UTC), tick=False):
        membership_change_role(membership=Membership.objects.get(team=team, user=grader),
                               changed_by=owner, role=Role.LEAD)
    with time_machine.travel(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), tick=False):
        audit_record(action=Action.EXPORT_DOWNLOADED, actor=owner, team_id=team.pk,
                     object_type="evaluation", object_id=7, after={"format": export_format},
                     address="192.0.2.1")
    audit_record(action=Action.EXPORT_DOWNLOADED, actor=owner, team_id=team.pk + 1000)
    return team, owner, grader
