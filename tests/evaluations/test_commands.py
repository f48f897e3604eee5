"""seed_demo: the Demo team, the demo engine's endpoint and model, a fetched evaluation."""

import pytest
from django.core.management import call_command

from evaluations.models import DemoProduct, Endpoint, Evaluation, SearchModel, Snapshot
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
                     "grader3": Role.GRADER, "admin": Role.OWNER}
    assert User.objects.get(username="lead").check_password("other-pass")
    assert Endpoint.objects.filter(team=team).count() == 1
    assert SearchModel.objects.filter(team=team).count() == 1
    assert Evaluation.objects.filter(team=team).count() == 1


def test_seed_demo_fetches_the_demo_evaluation_without_a_server(capsys):
    announced = []
    snapshots_created.connect(lambda sender, keyword, snapshots, **kw: announced.append(
        len(snapshots)), dispatch_uid="seed-test", weak=False)
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
    assert "50/50 keywords fetched" in capsys.readouterr().out
