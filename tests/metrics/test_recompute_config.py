"""A change of an evaluation's metric configuration is recomputed even when its message is
lost: the change marks the evaluation's keywords dirty in its own
transaction, so the sweep finds them, and the run that reads them clears the marks."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from evaluations.models import EvaluationMetric, Keyword
from evaluations.services import configuration, lifecycle
from judgments.scale_writes import transformer_delete, transformer_save
from metrics import tasks
from metrics.models import KeywordMetricValue
from metrics.recompute import run
from metrics.services import dirty_keywords_due
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.metrics.oracles import assert_stored_values_equal_a_full_recompute
from tests.recompute_state import dirty_marks, mean_of
from tests.searchtweak.factories import UserFactory
from tests.workers import tasks_sent_to

pytestmark = pytest.mark.django_db(transaction=True)

METRICS = [{"code": "precision", "k": 3, "params": {}}, {"code": "ndcg", "k": 3, "params": {}}]
# Nothing listens on port 9 (discard) on loopback: a publish fails for real.
BROKER_DOWN = "redis://127.0.0.1:9/0"


@contextmanager
def broker_down() -> Iterator[None]:
    """Tasks are published to a broker nobody answers at, and fail for real. Without a
    result store: its reconnects would take 20 s a publish, with the same outcome."""
    with tasks_sent_to(broker_url=BROKER_DOWN, queue="unreachable", result_backend="disabled"):
        yield


def graded_evaluation(team):
    """Three keywords, graded, their values stored (Celery runs eagerly here)."""
    evaluation = build_evaluation(
        team=team, keywords={"lamp": ["a", "b", "c"], "desk": ["d", "e"], "sofa": ["f"]},
        metrics=[(m["code"], m["k"], m["params"]) for m in METRICS])
    graders = [UserFactory(username="g0")]
    set_grades(graders, [(slot(evaluation, "lamp", 1), 0), (slot(evaluation, "lamp", 2), 3),
                         (slot(evaluation, "desk", 1), 2), (slot(evaluation, "desk", 2), 1)])
    assert dirty_keywords_due() == []
    return evaluation


def rr_values(evaluation) -> dict[str, float | None]:
    return dict(KeywordMetricValue.objects.filter(
        metric__evaluation=evaluation, metric__code="rr").values_list("keyword__text", "value"))


@override_settings(RECOMPUTE_SWEEP_AFTER_SECONDS=0)
def test_a_metric_added_while_the_broker_is_down_is_recomputed_by_the_sweep(personas):
    evaluation = graded_evaluation(personas.team)
    lead = APIClient()
    lead.force_authenticate(personas.lead)
    with broker_down():
        response = lead.patch(f"/api/v1/evaluations/{evaluation.pk}/",
                              {"metrics": [*METRICS, {"code": "rr", "k": 5}]}, format="json")
    assert response.status_code == 200, response.json()
    # The change is stored and its recompute is lost; the keywords say it is owed.
    assert rr_values(evaluation) == {}
    assert sorted(dirty_keywords_due()) == sorted(
        Keyword.objects.filter(evaluation=evaluation).values_list("pk", flat=True))

    assert tasks.sweep_dirty_keywords.delay().get() == 3  # eager again, as beat's run would
    # lamp's first relevant result is at rank 2, desk's at 1; sofa is ungraded.
    assert rr_values(evaluation) == {"lamp": 0.5, "desk": 1.0, "sofa": None}
    rr = EvaluationMetric.objects.get(evaluation=evaluation, code="rr")
    assert (mean_of(rr).value, mean_of(rr).keyword_count) == (0.75, 2)
    assert dirty_keywords_due() == []
    assert_stored_values_equal_a_full_recompute(evaluation.pk)


@override_settings(RECOMPUTE_SWEEP_AFTER_SECONDS=0)
def test_a_metric_removed_while_the_broker_is_down_leaves_the_evaluation_owed_a_run(personas):
    evaluation = graded_evaluation(personas.team)
    with broker_down():
        configuration.evaluation_update(evaluation=evaluation, metrics=METRICS[:1])
    assert len(dirty_keywords_due()) == 3
    assert tasks.sweep_dirty_keywords.delay().get() == 3
    assert dirty_keywords_due() == []
    assert_stored_values_equal_a_full_recompute(evaluation.pk)


def test_reordering_metrics_marks_nothing(personas):
    evaluation = graded_evaluation(personas.team)
    with broker_down():
        configuration.evaluation_update(evaluation=evaluation, metrics=METRICS[::-1])
    # Values do not depend on the order the metrics are shown in: nothing is owed.
    assert list(EvaluationMetric.objects.filter(evaluation=evaluation).order_by("position")
                .values_list("code", flat=True)) == ["ndcg", "precision"]
    assert dirty_keywords_due() == []


def test_a_run_whose_keywords_are_replaced_under_it_retries_and_converges(
        personas, monkeypatch):
    """Keywords deleted after the run read them, before it writes their values: its rows
    would point at nothing (an IntegrityError). The run gives way and its
    retry reads the keywords that remain."""
    evaluation = build_evaluation(
        team=personas.team, keywords={"lamp": ["a"], "desk": ["b"], "sofa": ["c"]},
        metrics=[("precision", 1, {})], status="pending")
    batch_values = run._batch_values
    replaced = []

    def keywords_replaced_meanwhile(*args, **kwargs):
        values = batch_values(*args, **kwargs)
        if not replaced:
            # Committed on a connection of its own: the run is not in a transaction.
            configuration.evaluation_update(evaluation=evaluation,
                                            keywords=["lamp", "chair"])
            replaced.append(True)
        return values

    monkeypatch.setattr(run, "_batch_values", keywords_replaced_meanwhile)
    assert tasks.recompute_evaluation.delay(evaluation.pk).get() == 2
    assert replaced == [True]
    assert set(Keyword.objects.filter(evaluation=evaluation).values_list("text", flat=True)) \
        == {"lamp", "chair"}
    assert sorted(KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
                  .values_list("keyword__text", flat=True)) == ["chair", "lamp"]
    assert not dirty_marks(evaluation=evaluation).exists()
    assert_stored_values_equal_a_full_recompute(evaluation.pk)


@override_settings(RECOMPUTE_SWEEP_AFTER_SECONDS=0)
@pytest.mark.parametrize("change", ["save", "delete"])
def test_a_team_transformer_changed_while_the_broker_is_down_is_recomputed_by_the_sweep(
        personas, change):
    """Precision reads graded grades through the team's graded->binary transformer: a new
    mapping changes its values though no grade and no metric changed."""
    strict = transformer_save(
        team=personas.team, source="graded", target="binary",
        mapping={"0": 0, "1": 0, "2": 0, "3": 1})
    evaluation = graded_evaluation(personas.team)
    untouched = build_evaluation(team=personas.team, keywords={"lamp": ["a"]},
                                 metrics=[("ndcg", 1, {})])  # graded: no transformer
    precision = EvaluationMetric.objects.get(evaluation=evaluation, code="precision")
    assert mean_of(precision).value == pytest.approx((1 / 2 + 0 / 2) / 2)  # only lamp's 3 counts
    with broker_down():
        if change == "save":
            transformer_save(
                team=personas.team, source="graded", target="binary",
                mapping={"0": 0, "1": 0, "2": 1, "3": 1})
        else:
            transformer_delete(transformer=strict)
    assert sorted(dirty_keywords_due()) == sorted(
        Keyword.objects.filter(evaluation=evaluation).values_list("pk", flat=True))
    assert not dirty_marks(evaluation=untouched).exists()

    assert tasks.sweep_dirty_keywords.delay().get() == 3
    precision.refresh_from_db()
    # 2 and up: lamp 1/2, desk 1/2; the default (1 and up): lamp 1/2, desk 2/2.
    assert mean_of(precision).value == pytest.approx(0.5 if change == "save" else 0.75)
    assert dirty_keywords_due() == []
    assert_stored_values_equal_a_full_recompute(evaluation.pk)


@override_settings(RECOMPUTE_SWEEP_AFTER_SECONDS=0)
def test_deleting_a_graded_evaluation_recomputes_the_pool_metrics_that_read_its_grades(
        personas):
    """Recall counts the relevant documents of the team's pool for the keyword's text:
    deleting the evaluation that judged them changes it, though none of its grades did."""
    judged = build_evaluation(team=personas.team, keywords={"Tent": ["d1", "d2"]},
                              metrics=[("cg", 1, {})])
    recall = build_evaluation(team=personas.team, keywords={"tent": ["d2", "d3"]},
                              metrics=[("recall", 2, {})])
    graders = [UserFactory(username="p0")]
    set_grades(graders, [(slot(judged, "Tent", 1), 3), (slot(judged, "Tent", 2), 2),
                         (slot(recall, "tent", 1), 2), (slot(recall, "tent", 2), 0)])
    config = EvaluationMetric.objects.get(evaluation=recall)
    assert (mean_of(config).value, mean_of(config).keyword_count) == (0.5, 1)  # d2 of d1 and d2
    with broker_down():
        lifecycle.evaluation_delete(evaluation=judged)
    sibling = Keyword.objects.get(evaluation=recall)
    assert dirty_keywords_due() == [sibling.pk]

    assert tasks.sweep_dirty_keywords.delay().get() == 1
    config.refresh_from_db()
    # d2, the only one left.
    assert (mean_of(config).value, mean_of(config).keyword_count) == (1.0, 1)
    assert dirty_keywords_due() == []
    assert_stored_values_equal_a_full_recompute(recall.pk)


@override_settings(RECOMPUTE_SWEEP_AFTER_SECONDS=0)
def test_a_metric_added_while_a_full_run_reads_leaves_its_keywords_for_the_next_run(
        personas, monkeypatch):
    """The run read the configuration before the change committed: it must not take the
    keywords the change marked for computed."""
    evaluation = graded_evaluation(personas.team)
    read_configs = run.evaluation_metric_configs
    added = []

    def metric_added_meanwhile(**kwargs):
        configs = read_configs(**kwargs)
        if not added:
            with broker_down():  # its own run is lost
                added.append(EvaluationMetric.objects.create(
                    evaluation=evaluation, code="rr", k=5, position=2))
        return configs

    monkeypatch.setattr(run, "evaluation_metric_configs", metric_added_meanwhile)
    assert run.evaluation_metrics_recompute(evaluation_id=evaluation.pk) == 3
    assert rr_values(evaluation) == {}
    assert len(dirty_keywords_due()) == 3
    monkeypatch.undo()
    assert tasks.sweep_dirty_keywords.delay().get() == 3
    assert rr_values(evaluation) == {"lamp": 0.5, "desk": 1.0, "sofa": None}
    assert_stored_values_equal_a_full_recompute(evaluation.pk)
