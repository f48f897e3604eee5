"""The audit trail: what the services record, with secrets masked, and that PostgreSQL
refuses to change or delete a row."""

import pytest
from django.db import DatabaseError, connection, transaction
from django.test import Client

from audit.models import Action, AuditEvent
from audit.services import MASK, audit_record, changes_masked
from evaluations.events import By
from evaluations.models import Evaluation
from evaluations.services.lifecycle import evaluation_delete, evaluation_finish
from searchtweak.models import Membership, Role, User
from searchtweak.services import api_token_create, membership_change_role
from tests.conftest import skip_or_fail
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import TeamFactory, member

pytestmark = pytest.mark.django_db


def test_only_changed_fields_are_kept_and_secret_ones_masked():
    assert changes_masked(
        {"name": "a", "role": "grader", "api_key": "sk-1", "password": "x"},
        {"name": "a", "role": "lead", "api_key": "sk-2", "secret_headers": {"X": "s"}},
    ) == {"api_key": [MASK, MASK], "password": [MASK, None], "role": ["grader", "lead"],
          "secret_headers": [None, MASK]}


def test_an_unknown_action_is_refused():
    with pytest.raises(ValueError, match="unknown audit action"):
        audit_record(action="evaluation_renamed")


def test_creating_an_api_token_is_recorded_without_its_key():
    user = User.objects.create_user("ada", password="pw-unused-1")
    token, key = api_token_create(user=user, name="laptop")
    event = AuditEvent.objects.get()
    assert (event.action, event.actor_id, event.actor_label, event.object_type,
            event.object_id) == (Action.API_TOKEN_CREATED, user.pk, "ada", "api_token",
                                 str(token.pk))
    assert event.changes == {"key_prefix": [None, key[:8]], "name": [None, "laptop"]}
    assert key not in str(event.changes)


def test_a_role_change_records_the_role_before_and_after():
    team = TeamFactory()
    owner = member(team, Role.OWNER, "owner")
    grader = member(team, Role.GRADER, "grader")
    membership = Membership.objects.get(team=team, user=grader)
    membership_change_role(membership=membership, changed_by=owner, role=Role.LEAD)
    event = AuditEvent.objects.get(action=Action.ROLE_CHANGED)
    assert (event.actor_id, event.team_id, event.object_id) == (
        owner.pk, team.pk, str(membership.pk))
    assert event.changes == {"role": ["grader", "lead"]}


def test_signing_in_and_failing_to_are_recorded_with_the_address():
    User.objects.create_user("grace", password="right-horse-battery-9")
    client = Client(REMOTE_ADDR="192.0.2.7")
    client.post("/login/", {"username": "grace", "password": "wrong-one"})
    client.post("/login/", {"username": "grace", "password": "right-horse-battery-9"})
    failed, signed_in = AuditEvent.objects.order_by("pk")
    assert (failed.action, failed.actor_id, failed.actor_label, failed.client_address) == (
        Action.SIGN_IN_FAILED, None, "grace", "192.0.2.7")
    assert (signed_in.action, signed_in.actor_label, signed_in.client_address) == (
        Action.SIGN_IN, "grace", "192.0.2.7")
    assert "wrong-one" not in str(failed.changes)


def test_finishing_and_deleting_an_evaluation_are_recorded_with_who_did_it():
    team = TeamFactory()
    lead = member(team, Role.LEAD, "lead")
    evaluation = evaluation_with_slots(team, keywords=1, positions=1)
    evaluation_finish(evaluation=evaluation, by=By.USER, user=lead)
    evaluation_delete(evaluation=Evaluation.objects.get(pk=evaluation.pk), user=lead)
    finished, deleted = AuditEvent.objects.filter(
        object_type="evaluation", object_id=str(evaluation.pk)).order_by("pk")
    assert (finished.action, finished.actor_label, finished.team_id) == (
        Action.EVALUATION_FINISHED, "lead", team.pk)
    assert finished.changes == {"by": [None, "user"], "status": ["active", "finished"]}
    assert (deleted.action, deleted.actor_id) == (Action.EVALUATION_DELETED, lead.pk)
    assert deleted.changes == {"name": [evaluation.name, None], "status": ["finished", None]}


def test_postgresql_refuses_to_change_or_delete_a_row():
    if connection.vendor != "postgresql":
        skip_or_fail("the append-only trigger is PostgreSQL's: set DATABASE_URL")
    event = audit_record(action=Action.SIGN_IN, actor_label="someone")
    for change in (lambda: AuditEvent.objects.filter(pk=event.pk).update(actor_label="x"),
                   lambda: AuditEvent.objects.filter(pk=event.pk).delete()):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            change()
    assert AuditEvent.objects.get(pk=event.pk).actor_label == "someone"


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_that_leaves_rows_is_cleaned_up_on_every_database():
    """tests/emptied_tables.py empties the trail with TRUNCATE, which the trigger allows:
    a DELETE there failed every such test's teardown on PostgreSQL."""
    audit_record(action=Action.SIGN_IN, actor_label="left-behind")
    assert AuditEvent.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_row_left_by_the_test_before_is_gone():
    assert not AuditEvent.objects.filter(actor_label="left-behind").exists()
