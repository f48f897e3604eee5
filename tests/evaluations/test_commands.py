"""seed_demo: the Demo team, the demo engine's endpoint and model, a fetched evaluation."""

import pytest
from django.core.management import call_command

from evaluations.models import (
    DemoProduct,
    Endpoint,
    Evaluation,
    KeywordSet,
    SearchModel,
    Snapshot,
)
from evaluations.signals import snapshots_created
from searchtweak.models import Membership, Role, Team, User

pytestmark = pytest.mark.django_db


def test_seed_demo_is_safe_to_run_twice(capsys):
    call_command("seed_demo")
    call_command("seed_demo", "--password", "other-pass")
    out = capsys.readouterr().out
    assert "grader3 / other-pass" in out
    team = Team.objects.get(name="Demo")
    roles = dict(Membership.objects.filter(team=team).values_list("user__username", "role"))
    assert roles == {"lead": Role.LEAD, "grader1": Role.GRADER, "grader2": Role.GRADER,
                     "grader3": Role.GRADER, "admin": Role.OWNER, "viewer": Role.VIEWER}
    assert User.objects.get(username="lead").check_password("other-pass")
    assert Endpoint.objects.filter(team=team).count() == 1
    assert SearchModel.objects.filter(team=team).count() == 1
    assert Evaluation.objects.filter(team=team).count() == 1
    assert KeywordSet.objects.filter(team=team).count() == 1


def test_the_demo_runs_a_weighted_tagged_query_set_with_traffic_segments():
    call_command("seed_demo")
    query_set = KeywordSet.objects.get(name="Demo: shoppers' queries")
    assert query_set.traffic_segments
    evaluation = Evaluation.objects.get(name="Demo: product search relevance")
    assert evaluation.query_set_version == query_set.current_version()
    keywords = {text: (weight, tags) for text, weight, tags in
                evaluation.keywords.values_list("text", "weight", "tags")}
    assert len(keywords) == 50
    # 44,290 searches: the ninth busiest starts at 22,000, under half (22,145): nine head.
    assert keywords["running shoes"] == (5200, ["head", "intent:broad", "lang:en"])
    assert keywords["oak bookshelf"] == (75, ["intent:specific", "lang:en", "tail"])
    segments = [next(tag for tag in tags if tag in {"head", "torso", "tail"})
                for _, tags in keywords.values()]
    assert (segments.count("head"), segments.count("torso"), segments.count("tail")) == (
        9, 13, 28)


def test_seed_demo_fetches_the_demo_evaluation_without_a_server(capsys):
    announced = []
    snapshots_created.connect(lambda sender, snapshots_by_keyword, **kw: announced.extend(
        len(snapshots) for snapshots in snapshots_by_keyword.values()),
        dispatch_uid="seed-test", weak=False)
    try:
        call_command("seed_demo")
    finally:
        snapshots_created.disconnect(dispatch_uid="seed-test")
    evaluation = Evaluation.objects.get(team__name="Demo")
    assert evaluation.status == Evaluation.Status.ACTIVE
    assert (evaluation.scale, evaluation.strategy) == ("graded", 3)
    assert list(evaluation.metric_configs.values_list("code", "k")) == [
        ("precision", 10), ("ap", 10), ("ndcg", 10)]
    keywords = evaluation.keywords.all()
    assert keywords.count() == 50
    assert set(keywords.values_list("fetch_status", flat=True)) == {"fetched"}
    assert len(announced) == 50 and all(count == 10 for count in announced)
    top = Snapshot.objects.get(keyword__text="cast iron skillet", position=1)
    assert "skillet" in top.name.lower()
    assert top.image.startswith("data:image/svg+xml;base64,")
    assert set(top.fields) == {"Category", "Brand", "Price", "Description"}
    assert DemoProduct.objects.count() == 3000
    assert "50 of 50 keywords fetched, 0 failed" in capsys.readouterr().out


def _next_slot(username: str):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(User.objects.get(username=username))
    evaluation = Evaluation.objects.get(team__name="Demo")
    return client.post(f"/api/v1/evaluations/{evaluation.pk}/next/", format="json")


def test_every_demo_grader_gets_work_right_after_seeding():
    from judgments.queue import slot_claim_next

    call_command("seed_demo")
    team = Team.objects.get(name="Demo")
    evaluation = Evaluation.objects.get(team=team)
    assert evaluation.tags == []
    for username in ("grader1", "grader2", "grader3"):
        slot = slot_claim_next(
            user=User.objects.get(username=username), team=team)
        assert slot is not None, username
        assert slot.keyword.evaluation_id == evaluation.pk
    response = _next_slot("grader1")
    assert response.status_code == 200
    assert Snapshot.objects.filter(pk=response.json()["snapshot"],
                                   keyword__evaluation=evaluation).exists()


def test_the_lead_sees_metric_values_as_demo_grades_arrive(django_capture_on_commit_callbacks):
    from judgments.grading import feedback_submit
    from judgments.queue import slot_claim_next

    # As in production, the seed's commits run their callbacks: creating the metric
    # configuration marks the keywords dirty and its recompute clears the marks.
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo")
    evaluation = Evaluation.objects.get(team__name="Demo")
    assert set(evaluation.metric_configs.with_stored_mean().values_list("value", flat=True)) \
        == {None}
    grader = User.objects.get(username="grader1")
    slot = slot_claim_next(user=grader, team=evaluation.team)
    with django_capture_on_commit_callbacks(execute=True):
        feedback_submit(user=grader, slot_id=slot.pk, grade=3)
    precision = evaluation.metric_configs.with_stored_mean().get(code="precision")
    assert precision.keyword_count == 1
    assert precision.value is not None and precision.value > 0


def test_seeding_again_repairs_a_demo_evaluation_routed_to_nobody(capsys):
    call_command("seed_demo")
    evaluation = Evaluation.objects.get(team__name="Demo")
    # What databases seeded before this fix hold: a tag no demo grader carries.
    Evaluation.objects.filter(pk=evaluation.pk).update(tags=["demo"])
    assert _next_slot("grader2").status_code == 204
    call_command("seed_demo")
    evaluation.refresh_from_db()
    assert evaluation.tags == []
    assert _next_slot("grader2").status_code == 200


@pytest.mark.parametrize("address", [
    "http://127.0.0.1:8100", "http://127.0.0.1:8100/", "http://127.0.0.1:8100/demo/search",
    "http://127.0.0.1:8100/demo/search/",
])
def test_a_base_or_full_demo_address_resolves_to_the_same_search_url(address):
    from evaluations import demo

    assert demo.search_url(address) == "http://127.0.0.1:8100/demo/search"


def test_seeding_on_another_port_points_the_demo_endpoint_there(capsys):
    call_command("seed_demo")
    call_command("seed_demo", "--demo-url", "http://127.0.0.1:8100")
    endpoint = Endpoint.objects.get(team__name="Demo")
    assert endpoint.url == "http://127.0.0.1:8100/demo/search"
    assert "served at http://127.0.0.1:8100/demo/search?q=" in capsys.readouterr().out


def test_seed_demo_prints_how_many_keywords_were_fetched_and_failed(capsys):
    call_command("seed_demo")
    out = capsys.readouterr().out
    assert "50 of 50 keywords fetched, 0 failed (50 tried just now)." in out
    assert "First error" not in out


def test_seed_demo_prints_the_failures_and_the_first_error(capsys):
    from evaluations import demo
    from evaluations.endpoints import services as endpoint_services

    team = Team.objects.create(name="Demo")
    # An endpoint whose mapper looks for the documents where the demo engine has none.
    endpoint_services.endpoint_create(team=team, created_by=None, name="Demo product search",
                                      url="http://127.0.0.1:8000/demo/search",
                                      mapper={**demo.DEMO_MAPPER, "documents": "results"})
    call_command("seed_demo")
    out = capsys.readouterr().out
    assert "0 of 50 keywords fetched, 50 failed (50 tried just now)." in out
    assert "First error ('waterproof hiking boots'): mapper.documents: 'results' found nothing" \
        in out


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow_reason("runs seed_demo against a live server over HTTP")
def test_the_demo_model_fetches_over_http_from_a_base_demo_address(live_server, capsys):
    from evaluations.services import configuration, lifecycle

    call_command("seed_demo", "--demo-url", live_server.url)
    assert "50 of 50 keywords fetched, 0 failed" in capsys.readouterr().out
    model = SearchModel.objects.get(team__name="Demo")
    assert model.endpoint.url == f"{live_server.url}/demo/search"
    # A lead's own evaluation on the demo model goes over the network to the served engine.
    lead = User.objects.get(username="lead")
    evaluation = configuration.evaluation_create(
        team=model.team, created_by=lead, model=model, name="Over HTTP", scale="graded",
        strategy=1, keywords=["cast iron skillet", "yoga mat"],
        metrics=[{"code": "precision", "k": 5, "params": {}}])
    lifecycle.evaluation_start(evaluation=evaluation)
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.ACTIVE
    assert set(evaluation.keywords.values_list("fetch_status", flat=True)) == {"fetched"}
    assert "skillet" in Snapshot.objects.get(keyword__evaluation=evaluation,
                                             keyword__text="cast iron skillet",
                                             position=1).name.lower()


def test_seeding_again_fetches_the_keywords_that_failed_before(capsys):
    call_command("seed_demo")
    evaluation = Evaluation.objects.get(team__name="Demo")
    evaluation.keywords.filter(position__lte=2).update(
        fetch_status="failed", fetch_error="HTTP 502 from the endpoint")
    evaluation.keywords.filter(position__lte=2).first().snapshots.all().delete()
    capsys.readouterr()
    call_command("seed_demo")
    assert "50 of 50 keywords fetched, 0 failed (2 tried just now)." in capsys.readouterr().out
    assert set(evaluation.keywords.values_list("fetch_status", flat=True)) == {"fetched"}
    assert Snapshot.objects.filter(keyword__evaluation=evaluation).count() == 500
