"""A counting judge beside people on real PostgreSQL rows: lanes and graders at once, the
judge writing only the slot its own account holds, never one a person holds or graded."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count
from django.utils import timezone

from judges import batch_claiming, runs, tasks
from judges.models import JudgeRun, JudgeRunItem
from judgments.grading import feedback_submit
from judgments.models import FeedbackSlot
from judgments.queue import slot_claim_next
from searchtweak.models import Role
from tests.conftest import skip_or_fail
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, ModelAnswer, document_ids, fake_provider
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member

pytestmark = pytest.mark.django_db(transaction=True)

LANES, GRADERS = 3, 3
JUDGE_GRADE, JUDGE_REASON = 3, "the judge's reason"


def test_a_judge_writes_only_its_own_slot_beside_people_at_once(personas, monkeypatch):
    if connection.vendor != "postgresql":
        skip_or_fail("row locks (FOR UPDATE SKIP LOCKED) need PostgreSQL: set DATABASE_URL")
    evaluation = evaluation_with_slots(personas.team, keywords=4, positions=6, strategy=3)
    # A person holds one slot of every result (claimed, not graded yet, lease running).
    holder = member(personas.team, Role.GRADER, "holder")
    held_ids = list(FeedbackSlot.objects.filter(evaluation=evaluation, index=0)
                    .values_list("pk", flat=True))
    FeedbackSlot.objects.filter(pk__in=held_ids).update(
        user=holder, assigned_at=timezone.now(),
        lease_expires_at=timezone.now() + timedelta(hours=1))
    graders = [member(personas.team, Role.GRADER, f"g{n}") for n in range(GRADERS)]
    # Lanes are started by the test's threads below, not by the run's dispatch.
    monkeypatch.setattr(tasks, "run_lanes_dispatch", lambda run_id, count: None)
    submitted: dict[int, tuple[int, int]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(LANES + GRADERS)

    with fake_provider(OPENAI) as provider:
        def answer(prompt, request):
            return ModelAnswer({"grades": [
                {"id": doc_id, "grade": JUDGE_GRADE, "reason": JUDGE_REASON}
                for doc_id in document_ids(prompt)]}, delay=0.01)

        provider.default = answer
        judge = judge_for(personas.team, provider, batch_size=2, max_concurrent_requests=LANES)
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.FILL,
                             started_by=personas.lead)

        def lane(number: int) -> None:
            try:
                start.wait()
                while tasks.lane_work(run.pk, seconds=60, lane=batch_claiming.Lane(number, LANES)):
                    pass
            except BaseException as error:
                errors.append(error)
            finally:
                connection.close()

        def grade(user) -> None:
            try:
                start.wait()
                while (slot := slot_claim_next(user=user, team=personas.team,
                                               evaluation=evaluation)) is not None:
                    value = (slot.pk + user.pk) % 3  # 0..2: never the judge's 3
                    feedback_submit(user=user, slot_id=slot.pk, grade=value)
                    submitted[slot.pk] = (user.pk, value)
            except BaseException as error:
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=lane, args=(n,)) for n in range(LANES)] + [
            threading.Thread(target=grade, args=(user,)) for user in graders]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert [thread.name for thread in threads if thread.is_alive()] == []
    assert not errors, errors

    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE
    slots = FeedbackSlot.objects.filter(evaluation=evaluation)
    # The person's held slots are untouched: theirs, ungraded, no reason from the judge.
    assert set(slots.filter(pk__in=held_ids).values_list("user_id", "grade", "reason")) == {
        (holder.pk, None, "")}
    # Every grader's grade stands under their name.
    for slot_id, (user_id, value) in submitted.items():
        assert slots.filter(pk=slot_id).values_list("user_id", "grade").get() == (
            user_id, value)
    # The judge's grades are in its own slots only, one per result at most.
    judged = slots.filter(user=judge.user)
    assert set(judged.values_list("grade", "reason")) <= {(JUDGE_GRADE, JUDGE_REASON)}
    assert not judged.filter(grade__isnull=True).exists()
    assert not judged.values("snapshot_id").annotate(n=Count("pk")).filter(n__gt=1).exists()
    assert not slots.filter(grade=JUDGE_GRADE).exclude(user=judge.user).exists()
    # Each pair is done (the judge got a slot) or skipped (people filled them first).
    items = JudgeRunItem.objects.filter(run=run)
    assert set(items.values_list("status", flat=True)) <= {"done", "skipped"}
    assert items.filter(status="done").count() == judged.count() == run.done_count
    assert run.done_count > 0 and len(submitted) > 0  # both sides did work at once
