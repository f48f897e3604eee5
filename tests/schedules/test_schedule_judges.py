"""Judges on a schedule (schedules.run_judges): a counting judge named by a schedule grades
each run's pairs nobody has graded once the run is fetched (the new ones: reuse filled the
rest), against a real local model server; the run then finishes by itself. Only counting
judges may be named."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.exceptions import ValidationError

from evaluations.models import Evaluation
from evaluations.query_sets import services as query_set_services
from judges.models import JudgeRun
from judgments.models import FeedbackSlot
from schedules import firing
from schedules import services as schedule_services
from schedules.models import Schedule, ScheduleRun
from schedules.run_judges import counting_judges
from tests.evaluations.factories import ES_MAPPER, EndpointFactory, SearchModelFactory
from tests.evaluations.servers import Reply, hits, running_server
from tests.judges.builders import judge_for
from tests.judges.fake_providers import OPENAI, fake_provider, grade_all

pytestmark = pytest.mark.django_db(transaction=True)

START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _quick_retries(settings):
    settings.JUDGE_RETRY_BACKOFF_MS = 10
    settings.FETCH_RETRIES = 0


def test_a_schedules_judge_grades_only_each_runs_new_pairs(personas):
    with running_server() as search, fake_provider(OPENAI) as provider:
        provider.default = grade_all(lambda doc_id: 2, reason="fits")
        judge = judge_for(personas.team, provider)
        shadow = judge_for(personas.team, provider, name="Not yet", counts=False)
        assert counting_judges(personas.team) == [(judge.pk, "Judge Dredd")]
        endpoint = EndpointFactory(team=personas.team, url=f"{search.url}/search",
                                   mapper=ES_MAPPER)
        model = SearchModelFactory(endpoint=endpoint, team=personas.team)
        query_set = query_set_services.query_set_create(
            team=personas.team, created_by=personas.lead,
            name="Shoes", keywords=["boots", "sandals"])
        fields = {"name": "Nightly", "model": model, "query_set": query_set,
                  "scale": "graded", "strategy": 1, "interval_minutes": 60,
                  "metrics": [{"code": "ndcg", "k": 10, "params": {}}],
                  "baseline": Schedule.Baseline.PREVIOUS}
        with pytest.raises(ValidationError) as excinfo:
            schedule_services.schedule_create(team=personas.team, created_by=personas.lead,
                                     judge_ids=[shadow.pk], **fields)
        assert excinfo.value.message_dict["judge_ids"] == [
            f"No judge {shadow.pk} whose grades count in this team."]
        with time_machine.travel(START, tick=False):
            schedule_services.schedule_create(team=personas.team, created_by=personas.lead,
                                     judge_ids=[judge.pk], **fields)
            firing.schedules_tick()

        first = ScheduleRun.objects.get().evaluation
        run = JudgeRun.objects.get(evaluation=first)
        assert (run.judge, run.mode, run.status, run.pair_count) == (
            judge, JudgeRun.Mode.UNGRADED, JudgeRun.Status.DONE, 6)
        assert set(FeedbackSlot.objects.filter(evaluation=first).values_list(
            "user", "grade")) == {(judge.user.pk, 2)}
        first.refresh_from_db()
        assert first.status == Evaluation.Status.FINISHED  # every slot graded: auto finish

        # The engine now puts one new document on top: only those go to the judge.
        search.handler = lambda request: Reply(body={"hits": {"hits": [
            {"_id": f"{request.query['q'][0]}-new", "_source": {"title": "new", "rank": 0}},
            *hits(request.query["q"][0])["hits"]["hits"]]}})
        calls_before = len(provider.received)
        with time_machine.travel(START + timedelta(hours=1), tick=False):
            firing.schedules_tick()
        second = ScheduleRun.objects.order_by("-due_at").first().evaluation
        run = JudgeRun.objects.get(evaluation=second)
        assert (run.status, run.pair_count, run.done_count) == (JudgeRun.Status.DONE, 2, 2)
        assert len(provider.received) > calls_before
        judged = FeedbackSlot.objects.filter(evaluation=second, reused_from__isnull=True)
        assert sorted(judged.values_list("snapshot__doc_id", flat=True)) == [
            "boots-new", "sandals-new"]
        second.refresh_from_db()
        assert second.status == Evaluation.Status.FINISHED
