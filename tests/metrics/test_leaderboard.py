"""Leaderboards and the team dashboard: stored values ranked, graders counted by hand."""

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluations.models import Evaluation
from judgments.models import FeedbackSlot
from judgments.queue_selectors import grader_queue_size
from metrics.models import KeywordMetricValue
from metrics.reports import leaderboards
from tests.metrics.builders import build_evaluation
from tests.metrics.test_dashboard_builders import bulk_evaluation, graders_of

pytestmark = pytest.mark.django_db


def test_models_are_ranked_on_the_keywords_their_latest_evaluations_share(personas):
    graders = graders_of(personas.team)
    old = bulk_evaluation(team=personas.team, graders=graders, keyword_count=6, seed=1,
                          finished_at=timezone.now() - timezone.timedelta(days=3))
    latest = bulk_evaluation(team=personas.team, graders=graders, keyword_count=6, seed=2,
                             model=old.model)
    other = bulk_evaluation(team=personas.team, graders=graders, keyword_count=4, seed=3)
    board = leaderboards.model_leaderboard(team=personas.team, metric="ap:5")
    assert board.chosen == "ap:5" and board.shared_keyword_count == 4
    by_model = {s.model.pk: s for s in board.standings}
    assert by_model[old.model_id].evaluation == latest  # the latest finished one

    def mean_on_first_four(evaluation):
        values = [v for v in KeywordMetricValue.objects.filter(
            metric__evaluation=evaluation, metric__code="ap", keyword__position__lte=4,
        ).values_list("value", flat=True) if v is not None]
        return sum(values) / len(values)

    assert by_model[old.model_id].value == pytest.approx(mean_on_first_four(latest))
    assert by_model[other.model_id].value == pytest.approx(mean_on_first_four(other))
    values = [s.value for s in board.standings]
    assert values == sorted(values, reverse=True)
    assert ("ap:5", "AP@5") in board.choices


def test_graders_are_counted_and_agreement_with_the_majority_is_by_hand(personas):
    g0, g1, g2 = graders_of(personas.team)
    evaluation = build_evaluation(team=personas.team, scale="binary", strategy=3,
                                  keywords={"a": ["d1", "d2", "d3"]},
                                  metrics=[("precision", 3, {})])
    # d1: 1 1 0 → majority 1 (g0, g1 agree; g2 not). d2: 0 0 0 → all agree.
    # d3: 1 0 - → only two grades: no 3-grader majority, left out.
    grades = {1: [1, 1, 0], 2: [0, 0, 0], 3: [1, 0, None]}
    for position, row in grades.items():
        for index, grade in enumerate(row):
            FeedbackSlot.objects.filter(evaluation=evaluation, snapshot__position=position,
                                        index=index).update(
                grade=grade, user=[g0, g1, g2][index] if grade is not None else None,
                graded_at=timezone.now() if grade is not None else None)
    standings = {s.username: s for s in leaderboards.grader_leaderboard(team=personas.team)}
    assert (standings[g0.username].grades_given, standings[g0.username].agreed,
            standings[g0.username].with_majority) == (3, 2, 2)
    assert standings[g2.username].grades_given == 2
    assert (standings[g2.username].agreed, standings[g2.username].with_majority) == (1, 2)
    assert standings[g2.username].agreement == 0.5
    assert standings[personas.lead.username].agreement is None


def test_the_team_dashboard_shows_queue_active_recent_and_activity(client, personas):
    graders = graders_of(personas.team)
    done = bulk_evaluation(team=personas.team, graders=graders, keyword_count=3, name="Done")
    bulk_evaluation(team=personas.team, graders=graders, keyword_count=4, name="Running",
                    status=Evaluation.Status.ACTIVE, graded_share=0.0, strategy=1)
    # 4 keywords x 5 results, one slot each, nothing graded: 20 results wait for anyone.
    assert grader_queue_size(user=personas.grader, team=personas.team) == 20
    client.force_login(personas.grader)
    html = client.get(reverse("metrics:team_dashboard")).content.decode()
    assert 'data-testid="queue-size">20<' in html
    assert "Running" in html and "Done" in html
    precision = done.metric_configs.with_stored_mean().get(code="precision").value
    assert f"{precision:.3f}" in html
    assert graders[0].username in html and 'class="chart line-chart"' in html
    assert client.post(reverse("metrics:team_dashboard")).status_code == 405


def test_the_leaderboard_page_ranks_models_and_graders(client, personas):
    graders = graders_of(personas.team)
    bulk_evaluation(team=personas.team, graders=graders, keyword_count=3)
    client.force_login(personas.lead)
    response = client.get(reverse("metrics:leaderboard"), {"metric": "precision:5"})
    html = response.content.decode()
    assert response.status_code == 200
    assert '<option value="precision:5" selected>' in html
    assert graders[0].username in html
    client.force_login(personas.outsider)
    # The outsider's own team has nothing: the page shows nothing of Acme.
    assert graders[0].username not in client.get(reverse("metrics:leaderboard")).content.decode()
