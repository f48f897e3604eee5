"""Schedules (schedules.services, schedules.firing) on a clock the tests move: each
due time fires once, also when two ticks race; a missed window fires once; pause and resume;
runs fetch from a real local search server, reuse earlier grades, finish at their deadline,
are archived beyond keep_runs; three runs whose fetch failed in a row pause the schedule and
tell the team once; every bad field is refused with its name, nothing saved."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.db import connection

from evaluations.models import Evaluation
from evaluations.query_sets import services as query_set_services
from evaluations.services import lifecycle
from judgments.models import FeedbackSlot
from metrics.models import RegressionVerdict, TeamBaseline
from notifications.models import Event, Notification
from schedules import firing, timing
from schedules import services as schedule_services
from schedules.models import Schedule, ScheduleRun
from tests.conftest import skip_or_fail
from tests.evaluations.factories import ES_MAPPER, EndpointFactory, SearchModelFactory
from tests.evaluations.servers import Reply, hits, running_server

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
METRICS = [{"code": "ndcg", "k": 10, "params": {}}]


@pytest.fixture
def server():
    with running_server() as server:
        yield server


@pytest.fixture
def setup(personas, server, settings):
    settings.FETCH_RETRIES = 0
    endpoint = EndpointFactory(team=personas.team, url=f"{server.url}/search", mapper=ES_MAPPER)
    model = SearchModelFactory(endpoint=endpoint, team=personas.team)
    query_set = query_set_services.query_set_create(
        team=personas.team, created_by=personas.lead,
        name="Shoes", keywords=["boots", "sandals", "heels"])
    return personas, model, query_set


def make(setup, **fields) -> Schedule:
    personas, model, query_set = setup
    values = {"name": "Nightly", "model": model, "query_set": query_set, "scale": "graded",
              "strategy": 1, "metrics": METRICS, "interval_minutes": 60,
              "baseline": Schedule.Baseline.PREVIOUS, **fields}
    return schedule_services.schedule_create(team=personas.team, created_by=personas.lead, **values)


def tick(capture, at: datetime) -> firing.TickReport:
    with time_machine.travel(at, tick=False), capture(execute=True):
        return firing.schedules_tick()


def field_errors(excinfo) -> dict:
    return excinfo.value.message_dict


# --- when it is due -------------------------------------------------------------------------


def test_an_interval_schedule_fires_once_per_due_time(setup, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
    assert schedule.next_due_at == START  # an interval schedule's first run is at once

    report = tick(capture, START + timedelta(seconds=5))
    assert (report.fired, report.skipped) == (1, 0)
    assert tick(capture, START + timedelta(seconds=35)).fired == 0  # same due time: nothing
    assert tick(capture, START + timedelta(minutes=59)).fired == 0
    assert tick(capture, START + timedelta(minutes=60, seconds=10)).fired == 1

    runs = list(ScheduleRun.objects.order_by("due_at"))
    assert [run.due_at for run in runs] == [START, START + timedelta(minutes=60)]
    schedule.refresh_from_db()
    assert schedule.next_due_at == START + timedelta(minutes=120)
    first = runs[0].evaluation
    assert first.name == "Nightly · 2026-11-26 09:00"
    assert first.reuse_grades == Evaluation.Reuse.DOCUMENT
    assert first.query_set_version == setup[2].current_version()
    # It fetched from the server: three keywords, three results each, one slot per result.
    assert first.status == Evaluation.Status.ACTIVE
    assert FeedbackSlot.objects.filter(evaluation=first).count() == 9
    assert runs[0].deadline_at == START + timedelta(seconds=5) + timedelta(hours=24)


def test_a_missed_window_fires_once_and_keeps_the_rhythm(setup,
                                                         django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
    tick(django_capture_on_commit_callbacks, START)
    # Everything was down for five hours and twenty minutes.
    report = tick(django_capture_on_commit_callbacks, START + timedelta(hours=5, minutes=20))
    assert report.fired == 1
    assert ScheduleRun.objects.count() == 2
    schedule.refresh_from_db()
    assert schedule.next_due_at == START + timedelta(hours=6)  # on the hour, as before


def test_a_cron_schedule_fires_at_its_times_in_its_time_zone(setup,
                                                             django_capture_on_commit_callbacks):
    # 06:00 in Berlin on weekdays is 05:00 UTC in November; 2026-11-26 is a Thursday.
    with time_machine.travel(START, tick=False):
        schedule = make(setup, interval_minutes=None, cron="0 6 * * 1-5",
                        time_zone="Europe/Berlin")
    assert schedule.next_due_at == datetime(2026, 11, 27, 5, 0, tzinfo=UTC)
    assert tick(django_capture_on_commit_callbacks, datetime(2026, 11, 27, 4, 59,
                                                             tzinfo=UTC)).fired == 0
    assert tick(django_capture_on_commit_callbacks, datetime(2026, 11, 27, 5, 0,
                                                             tzinfo=UTC)).fired == 1
    schedule.refresh_from_db()
    assert schedule.next_due_at == datetime(2026, 11, 30, 5, 0, tzinfo=UTC)  # Monday


def test_a_due_time_claimed_by_another_tick_makes_no_second_run(setup):
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
        first = firing.schedule_fire(schedule_id=schedule.pk, due_at=START)
        # A second process that read the same due time before the first one's claim.
        second = firing.schedule_fire(schedule_id=schedule.pk, due_at=START)
    assert first is not None and second is None
    assert ScheduleRun.objects.count() == 1


def test_the_claim_is_what_stops_a_second_run(setup, monkeypatch):
    """Without the conditional UPDATE's due-time condition, a stale reader fires again (the
    unique constraint then refuses the run, but only because due_at repeats)."""
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
        firing.schedule_fire(schedule_id=schedule.pk, due_at=START)
        schedule.refresh_from_db()
        later = schedule.next_due_at
        # A tick that read the schedule before the first claim and is handed a later time
        # still matches nothing: only the due time it read can be claimed.
        assert firing.schedule_fire(schedule_id=schedule.pk,
                                      due_at=later + timedelta(minutes=1)) is None
    assert ScheduleRun.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_ticks_racing_on_postgresql_fire_each_due_time_once(setup):
    if connection.vendor != "postgresql":
        skip_or_fail("a race between connections needs PostgreSQL: set DATABASE_URL")
    with time_machine.travel(START, tick=False):
        make(setup, name="A")
        make(setup, name="B")
    barrier = threading.Barrier(2)
    reports = []

    def tick_in_thread() -> None:
        try:
            barrier.wait()
            reports.append(firing.schedules_tick())
        finally:
            connection.close()

    # One travel around both threads: the clock is patched for the whole process, and two
    # travels entered and left by racing threads would not unwind in order (a frozen clock
    # then leaked into later tests).
    with time_machine.travel(START + timedelta(seconds=1), tick=False):
        threads = [threading.Thread(target=tick_in_thread) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert sum(report.fired for report in reports) == 2
    assert sorted(ScheduleRun.objects.values_list("schedule__name", flat=True)) == ["A", "B"]


# --- pause, resume, failures ----------------------------------------------------------------


def test_a_paused_schedule_does_not_fire_and_resumes_from_now(setup,
                                                              django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
        schedule = schedule_services.schedule_pause(schedule=schedule, reason="holiday")
    assert tick(django_capture_on_commit_callbacks, START + timedelta(hours=3)).fired == 0
    with time_machine.travel(START + timedelta(hours=3, minutes=10), tick=False):
        schedule = schedule_services.schedule_resume(schedule=schedule)
    assert (schedule.paused_at, schedule.paused_reason) == (None, "")
    assert schedule.next_due_at == START + timedelta(hours=4)  # not three runs made up
    assert tick(django_capture_on_commit_callbacks, START + timedelta(hours=4)).fired == 1
    assert ScheduleRun.objects.count() == 1


def test_three_runs_that_fetch_nothing_pause_the_schedule_and_say_so_once(
        setup, server, django_capture_on_commit_callbacks):
    personas = setup[0]
    server.handler = lambda request: Reply(status=503, body={"error": "down"})
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
    for hour in range(4):
        tick(django_capture_on_commit_callbacks, START + timedelta(hours=hour))

    schedule.refresh_from_db()
    assert schedule.is_paused and schedule.failed_run_streak == 3
    assert "the fetch failed for every keyword in 3 runs in a row" in schedule.paused_reason
    runs = list(ScheduleRun.objects.order_by("due_at").select_related("evaluation"))
    assert len(runs) == 3  # the fourth hour found it paused
    assert all(run.fetch_failed for run in runs)
    assert {run.evaluation.status for run in runs} == {Evaluation.Status.FINISHED}
    # Each run is undecided and says why; the first has no earlier run to compare with.
    verdicts = [RegressionVerdict.objects.get(evaluation=run.evaluation) for run in runs]
    assert {v.verdict for v in verdicts} == {"undecided"}
    assert verdicts[0].reasons == [
        "Undecided: No earlier run of the schedule has results to compare with.",
        "The fetch failed for every keyword: the run has no values."]
    paused = Notification.objects.filter(event=Event.SCHEDULE_PAUSED, user=personas.lead)
    assert paused.count() == 1
    assert paused.get().text.startswith("Schedule “Nightly” paused: the fetch failed")


def test_a_run_that_fetches_restarts_the_streak(setup, server,
                                                django_capture_on_commit_callbacks):
    answers = iter([503] * 3 * 2 + [200] * 3 + [503] * 3)

    def handler(request):
        status = next(answers)
        return Reply(status=status, body=hits(request.query["q"][0]) if status == 200
                     else {"error": "down"})

    server.handler = handler
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
    for hour in range(4):
        tick(django_capture_on_commit_callbacks, START + timedelta(hours=hour))
    schedule.refresh_from_db()
    assert not schedule.is_paused and schedule.failed_run_streak == 1
    assert list(ScheduleRun.objects.order_by("due_at").values_list("fetch_failed", flat=True)
                ) == [True, True, False, True]


def test_a_run_that_cannot_be_made_pauses_with_the_reason(setup,
                                                          django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
    query_set_services.query_set_archive(query_set=setup[2])
    report = tick(django_capture_on_commit_callbacks, START)
    assert (report.fired, report.skipped) == (0, 1)
    schedule.refresh_from_db()
    assert schedule.paused_reason == "could not make a run: Shoes is archived."
    assert not Evaluation.objects.exists()


# --- runs: deadline, reuse, keeping, verdicts -------------------------------------------------


def grade_all(evaluation, grade: int = 2) -> None:
    slots = FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True)
    slots.update(grade=grade, user=evaluation.created_by, graded_at=START)


def test_a_run_finishes_at_its_deadline_with_what_is_graded(setup,
                                                            django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        make(setup, deadline_hours=2, interval_minutes=24 * 60)
    tick(django_capture_on_commit_callbacks, START)
    run = ScheduleRun.objects.get()
    assert tick(django_capture_on_commit_callbacks,
                START + timedelta(hours=1, minutes=59)).finished_overdue == 0
    report = tick(django_capture_on_commit_callbacks, START + timedelta(hours=2))
    assert report.finished_overdue == 1
    run.evaluation.refresh_from_db()
    assert run.evaluation.status == Evaluation.Status.FINISHED
    assert FeedbackSlot.objects.filter(evaluation=run.evaluation, grade__isnull=True).count() == 9


def test_a_later_run_reuses_the_grades_of_earlier_ones(setup, server,
                                                       django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        make(setup)
    tick(django_capture_on_commit_callbacks, START)
    first = ScheduleRun.objects.get().evaluation
    grade_all(first, grade=3)
    # The engine now returns one new document per keyword at the top.
    server.handler = lambda request: Reply(body={"hits": {"hits": [
        {"_id": f"{request.query['q'][0]}-new", "_source": {"title": "new", "rank": 0}},
        *hits(request.query["q"][0])["hits"]["hits"]]}})
    tick(django_capture_on_commit_callbacks, START + timedelta(hours=1))
    second = ScheduleRun.objects.order_by("-due_at").first().evaluation
    slots = FeedbackSlot.objects.filter(evaluation=second)
    assert slots.count() == 12
    assert set(slots.filter(grade__isnull=True).values_list("snapshot__doc_id", flat=True)) == {
        "boots-new", "sandals-new", "heels-new"}
    assert set(slots.filter(grade__isnull=False).values_list("grade", flat=True)) == {3}


def test_runs_beyond_keep_runs_are_archived_never_deleted(setup,
                                                          django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        make(setup, keep_runs=2)
    for hour in range(4):
        tick(django_capture_on_commit_callbacks, START + timedelta(hours=hour))
        for run in ScheduleRun.objects.select_related("evaluation"):
            if run.evaluation.status == Evaluation.Status.ACTIVE:
                with django_capture_on_commit_callbacks(execute=True):
                    lifecycle.evaluation_finish(evaluation=run.evaluation)
    tick(django_capture_on_commit_callbacks, START + timedelta(hours=4))  # trims after firing
    runs = list(ScheduleRun.objects.order_by("due_at").select_related("evaluation"))
    assert len(runs) == 5
    assert [run.evaluation.archived_at is not None for run in runs] == [
        True, True, True, False, False]


def test_the_baseline_choice_picks_the_run_compared_with(setup,
                                                         django_capture_on_commit_callbacks):
    from schedules.verdicts import schedule_run_baseline

    with time_machine.travel(START, tick=False):
        schedule = make(setup, baseline=Schedule.Baseline.FIRST)
    for hour in range(3):
        tick(django_capture_on_commit_callbacks, START + timedelta(hours=hour))
        run = ScheduleRun.objects.order_by("-due_at").first()
        grade_all(run.evaluation)
        with django_capture_on_commit_callbacks(execute=True):
            lifecycle.evaluation_finish(evaluation=run.evaluation)
    first, second, third = ScheduleRun.objects.order_by("due_at").select_related("evaluation")
    assert schedule_run_baseline(run=third, evaluation=third.evaluation)[0] == first.evaluation
    assert schedule_run_baseline(run=first, evaluation=first.evaluation)[0] is None
    Schedule.objects.filter(pk=schedule.pk).update(baseline=Schedule.Baseline.PREVIOUS)
    third.schedule.refresh_from_db()
    assert schedule_run_baseline(run=third, evaluation=third.evaluation)[0] == second.evaluation
    Schedule.objects.filter(pk=schedule.pk).update(baseline=Schedule.Baseline.TEAM)
    third.schedule.refresh_from_db()
    TeamBaseline.objects.create(team=setup[0].team, evaluation=first.evaluation)
    assert schedule_run_baseline(run=third, evaluation=third.evaluation)[0] == first.evaluation
    # A run's verdict uses the schedule's rule and says it came from the schedule.
    verdict = RegressionVerdict.objects.filter(evaluation=third.evaluation).get()
    assert verdict.source == "schedule" and verdict.baseline == first.evaluation
    assert verdict.rule["min_coverage"] == 0.9


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"interval_minutes": 10}, "interval_minutes", "The minimum interval is 15 minutes."),
    ({"interval_minutes": None, "cron": "*/5 * * * *"}, "cron", "fires 5 minutes apart"),
    ({"interval_minutes": None, "cron": "0,5 * * * *"}, "cron", "fires 5 minutes apart"),
    ({"interval_minutes": None, "cron": "61 * * * *"}, "cron", "Not a cron expression"),
    ({"interval_minutes": None, "cron": "* * *"}, "cron", "Not a cron expression"),
    ({"interval_minutes": None}, "interval_minutes", "either an interval"),
    ({"cron": "0 6 * * *"}, "interval_minutes", "either an interval"),
    ({"time_zone": "Mars/Olympus"}, "time_zone", "Unknown time zone"),
    ({"baseline": Schedule.Baseline.TEAM}, "baseline", "The team has no baseline"),
    ({"metrics": []}, "metrics", "at least one metric"),
    ({"scale": "nope"}, "scale", "Unknown scale"),
    ({"name": "  "}, "name", "needs a name"),
    ({"deadline_hours": 0}, "deadline_hours", "Between 1 and"),
    ({"keep_runs": 0}, "keep_runs", "Between 1 and"),
    ({"min_coverage": 1.5}, "min_coverage", "between 0 and 1"),
    ({"judge_ids": [12345]}, "judge_ids", "No judge 12345"),
])
def test_a_bad_field_is_refused_by_name_and_nothing_is_saved(setup, fields, field, words):
    with pytest.raises(ValidationError) as excinfo:
        make(setup, **fields)
    assert any(words in message for message in field_errors(excinfo)[field])
    assert not Schedule.objects.exists()


def test_an_interval_of_exactly_the_minimum_is_accepted_and_one_less_refused(setup):
    # "At least 15 minutes": 15 itself is allowed.
    assert make(setup, interval_minutes=15).interval_minutes == 15
    with pytest.raises(ValidationError) as excinfo:
        make(setup, name="Hasty", interval_minutes=14)
    assert field_errors(excinfo) == {
        "interval_minutes": ["The minimum interval is 15 minutes."]}
    assert list(Schedule.objects.values_list("interval_minutes", flat=True)) == [15]


def test_a_cron_firing_every_15_minutes_is_accepted_and_every_14_refused():
    assert timing.cron_check(" */15  * * * * ", "UTC") == "*/15 * * * *"
    with pytest.raises(ValidationError) as excinfo:
        timing.cron_check("*/14 * * * *", "UTC")
    # Minutes 0, 14, 28, 42, 56: the first gap met is 14 (the 4 across the hour comes later).
    assert field_errors(excinfo) == {"cron": [
        "“*/14 * * * *” fires 14 minutes apart at times; the minimum is 15 minutes."]}


def test_a_schedule_on_a_cron_every_15_minutes_is_saved(setup):
    schedule = make(setup, interval_minutes=None, cron="*/15 * * * *")
    assert (schedule.interval_minutes, schedule.cron) == (None, "*/15 * * * *")


def test_a_team_baseline_on_another_scale_is_refused(setup):
    personas, model, _ = setup
    other = Evaluation.objects.create(team=personas.team, model=model, name="Binary base",
                                      scale="binary", strategy=1)
    TeamBaseline.objects.create(team=personas.team, evaluation=other)
    with pytest.raises(ValidationError) as excinfo:
        make(setup, baseline=Schedule.Baseline.TEAM)
    assert "graded on the binary scale, the schedule on graded" in (
        field_errors(excinfo)["baseline"][0])


def test_an_archived_query_set_is_refused(setup):
    """(A query set of 0 keywords cannot exist: query_set_create refuses it.)"""
    query_set_services.query_set_archive(query_set=setup[2])
    with pytest.raises(ValidationError) as excinfo:
        make(setup)
    assert field_errors(excinfo)["query_set"] == ["Shoes is archived."]


def test_changing_the_timing_moves_the_next_due_time(setup):
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
    with time_machine.travel(START + timedelta(minutes=7), tick=False):
        schedule = schedule_services.schedule_update(schedule=schedule, interval_minutes=30)
    assert schedule.next_due_at == START + timedelta(minutes=37)
    with pytest.raises(ValidationError):
        schedule_services.schedule_update(schedule=schedule, interval_minutes=5)
    schedule.refresh_from_db()
    assert schedule.interval_minutes == 30


def test_a_bad_time_zone_is_said_once_beside_a_cron_expression(setup):
    with pytest.raises(ValidationError) as excinfo:
        make(setup, interval_minutes=None, cron="0 6 * * *", time_zone="Mars/Olympus")
    assert list(field_errors(excinfo)) == ["time_zone"]
    assert len(field_errors(excinfo)["time_zone"]) == 1


@pytest.mark.parametrize(("minutes", "words"), [
    (15, "every 15 minutes"), (60, "every hour"), (90, "every 90 minutes"),
    (120, "every 2 hours"), (1440, "every day"), (2880, "every 2 days")])
def test_an_interval_in_words(minutes, words):
    assert Schedule(interval_minutes=minutes).when_text() == words


# --- the batch path (the tick) and the one-by-one path make the same run ----------------------


def run_shape(run: ScheduleRun) -> dict:
    evaluation = run.evaluation
    return {
        "status": evaluation.status, "started": evaluation.started_at is not None,
        "reuse": evaluation.reuse_grades, "auto_finish": evaluation.auto_finish,
        "version": evaluation.query_set_version_id, "scale": evaluation.scale,
        "strategy": evaluation.strategy,
        "description": evaluation.description.replace(run.schedule.name, "…"),
        "keywords": list(evaluation.keywords.order_by("position").values_list(
            "position", "text", "normalized_text", "fetch_status")),
        "metrics": list(evaluation.metric_configs.order_by("position").values_list(
            "position", "code", "k", "params")),
        "slots": FeedbackSlot.objects.filter(evaluation=evaluation).count(),
        "deadline": run.deadline_at - run.created_at > timedelta(hours=23),
    }


def test_the_tick_and_one_by_one_firing_make_the_same_run(setup,
                                                          django_capture_on_commit_callbacks):
    with time_machine.travel(START, tick=False):
        by_tick = make(setup, name="A")
        by_hand = make(setup, name="B")
    with time_machine.travel(START, tick=False), django_capture_on_commit_callbacks(
            execute=True):
        runs, one_by_one = firing.schedules_fire_batch(
            [(by_tick.pk, START)], now=START)
        firing.schedule_fire(schedule_id=by_hand.pk, due_at=START, now=START)
    assert len(runs) == 1 and one_by_one == []
    batched = ScheduleRun.objects.get(schedule=by_tick)
    single = ScheduleRun.objects.get(schedule=by_hand)
    assert run_shape(batched) == run_shape(single)
    assert run_shape(batched)["slots"] == 9 and run_shape(batched)["status"] == "active"


def test_the_batch_claims_only_the_due_time_it_read(setup):
    """Without the claim's due-time condition a stale reader would make a run for a time
    that is not due (the unique guard would not notice: the time differs)."""
    with time_machine.travel(START, tick=False):
        schedule = make(setup)
        runs, one_by_one = firing.schedules_fire_batch(
            [(schedule.pk, START - timedelta(minutes=60))], now=START)
    assert (runs, one_by_one) == ([], [])
    assert not Evaluation.objects.exists()
    schedule.refresh_from_db()
    assert schedule.next_due_at == START


def test_a_schedule_the_batch_cannot_run_is_left_to_the_one_by_one_path(setup):
    with time_machine.travel(START, tick=False):
        good = make(setup, name="Good")
        broken = make(setup, name="Broken")
    Schedule.objects.filter(pk=broken.pk).update(scale="gone")
    with time_machine.travel(START, tick=False):
        runs, one_by_one = firing.schedules_fire_batch(
            [(good.pk, START), (broken.pk, START)], now=START)
    assert [run.schedule_id for run in runs] == [good.pk]
    assert one_by_one == [(broken.pk, START)]
    broken.refresh_from_db()
    assert broken.next_due_at == START  # not claimed: schedule_fire claims it and pauses
    with time_machine.travel(START, tick=False):
        assert firing.schedule_fire(schedule_id=broken.pk, due_at=START) is None
    broken.refresh_from_db()
    assert broken.paused_reason == "could not make a run: Unknown scale 'gone'."


# --- the gate on a schedule's run --------------------------------------------------------------


def test_the_gate_on_a_run_uses_its_schedules_baseline_and_rule(
        setup, django_capture_on_commit_callbacks):
    from rest_framework.test import APIClient

    personas = setup[0]
    with time_machine.travel(START, tick=False):
        make(setup, baseline=Schedule.Baseline.PREVIOUS, min_coverage=0.5, threshold=0.2)
    for hour in range(2):
        tick(django_capture_on_commit_callbacks, START + timedelta(hours=hour))
        run = ScheduleRun.objects.order_by("-due_at").first()
        grade_all(run.evaluation)
        with django_capture_on_commit_callbacks(execute=True):
            lifecycle.evaluation_finish(evaluation=run.evaluation)
    first, second = ScheduleRun.objects.order_by("due_at").select_related("evaluation")
    client = APIClient()
    client.force_authenticate(personas.lead)

    answer = client.post(f"/api/v1/evaluations/{second.evaluation_id}/gate/", {},
                         format="json")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["baseline"] == first.evaluation_id
    assert (body["rule"]["min_coverage"], body["rule"]["threshold"]) == (0.5, 0.2)
    # A rule field given wins over the schedule's.
    answer = client.post(f"/api/v1/evaluations/{second.evaluation_id}/gate/",
                         {"min_coverage": 0.95}, format="json")
    assert answer.json()["rule"]["min_coverage"] == 0.95
    # The first run has nothing before it: said on the field, nothing stored.
    stored = RegressionVerdict.objects.count()
    answer = client.post(f"/api/v1/evaluations/{first.evaluation_id}/gate/", {},
                         format="json")
    assert answer.status_code == 400
    assert "No earlier run of the schedule has results to compare with." in str(
        answer.json())
    assert RegressionVerdict.objects.count() == stored
