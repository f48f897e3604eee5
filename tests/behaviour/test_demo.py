"""The demo's simulated search log: a week of each demo query's traffic over the demo
evaluation's results, seeded once, with click-through that follows the demo's relevance."""

from datetime import date, timedelta

import pytest

from behaviour.demo import DAYS, SOURCE_NAME, TRAFFIC_SHARE, demo_behaviour_ensure
from behaviour.models import BehaviourSource
from behaviour.selectors import evaluation_online_metrics
from evaluations import demo
from evaluations.management.commands.seed_demo import EVALUATION_NAME
from evaluations.models import Evaluation
from searchtweak.models import Team
from tests.demo_seed import seeded_demo

pytestmark = pytest.mark.django_db(transaction=True)

TODAY = date(2026, 11, 29)


def test_the_demo_log_covers_a_week_of_every_query_and_is_seeded_once():
    seeded_demo()
    team = Team.objects.get(name="Demo")
    evaluation = Evaluation.objects.get(team=team, name=EVALUATION_NAME)
    source = demo_behaviour_ensure(team=team, evaluation=evaluation, today=TODAY)
    assert source.name == SOURCE_NAME
    expected = sum(max(5, round(weight * TRAFFIC_SHARE)) for _t, weight, _i
                   in demo.SHOPPERS_QUERIES) * DAYS
    assert source.search_count == expected
    assert source.window_start_at.date() == TODAY - timedelta(days=DAYS - 1)
    assert demo_behaviour_ensure(team=team, evaluation=evaluation, today=TODAY) == source
    assert BehaviourSource.objects.filter(team=team).count() == 1
    online = evaluation_online_metrics(evaluation=evaluation, source=source, k=10)
    assert all(row.metrics is not None for row in online.keywords)
    # Every query's searches counted, day by day: running shoes (5,200 a day) 104 a day.
    shoes = next(row for row in online.keywords if row.text == "running shoes")
    assert shoes.metrics.searches == 104 * DAYS
    # The window keeps its days only: yesterday alone is one day's searches.
    yesterday = evaluation_online_metrics(evaluation=evaluation, source=source, k=10,
                                          start_on=TODAY - timedelta(days=1),
                                          end_on=TODAY - timedelta(days=1))
    assert yesterday.overall.pooled.searches * DAYS == expected
    pooled = online.overall.pooled
    assert 0.05 < pooled.ctr_at_k < 0.5 and 0 < pooled.abandonment < 1
    assert pooled.mean_dwell_seconds > 5
