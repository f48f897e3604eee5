"""Tests (a model's, an endpoint form's, a judge's) hold a web worker while an engine
answers: capped per team and over the whole site, since anyone may create teams; and one
person may create only so many teams."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from evaluations.endpoints import services as endpoint_services
from evaluations.models import SearchModel
from searchtweak.models import Membership, Role, Team
from searchtweak.outbound_limits import TestsBusy
from tests.evaluations.factories import ES_MAPPER
from tests.evaluations.servers import Reply, hits, running_server
from tests.searchtweak.factories import TeamFactory, UserFactory
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

SITE_BUSY = ("The site already runs 2 Tests at once (OUTBOUND_TESTS_SITE_WIDE), waiting for "
             "engines or judges to answer; try again in a moment.")


@pytest.fixture
def silent():
    release = threading.Event()
    with running_server() as server:
        server.handler = lambda request: (release.wait(60), Reply(body=hits("late")))[1]
        server.release = release
        yield server
        release.set()


def model_of(team, url):
    endpoint = endpoint_services.endpoint_create(team=team, created_by=None, name="e", url=url,
                                                 mapper=ES_MAPPER, timeout_seconds=30)
    model = endpoint_services.search_model_create(team=team, created_by=None, endpoint=endpoint,
                                                  name="m", params={"q": "#query#"})
    return SearchModel.objects.select_related("endpoint").get(pk=model.pk)


def test_two_teams_cannot_hold_more_tests_than_the_site_allows(silent, settings):
    settings.OUTBOUND_TESTS_PER_TEAM = 2
    settings.OUTBOUND_TESTS_SITE_WIDE = 2
    settings.OUTBOUND_TEST_DEADLINE_SECONDS = 30
    first, second = TeamFactory(name="One"), TeamFactory(name="Two")
    models = [model_of(first, f"{silent.url}/a"), model_of(second, f"{silent.url}/b")]
    with ThreadPoolExecutor(2) as pool:
        held = [pool.submit(endpoint_services.search_model_test, model=models[0], query="shoes"),
                pool.submit(endpoint_services.search_model_test, model=models[1], query="shoes")]
        wait_until(lambda: len(silent.received) == 2, "two Tests at the engine", timeout=10)
        # Each team is within its own cap of 2; the site's 2 are taken.
        for model in models:
            with pytest.raises(TestsBusy) as refused:
                endpoint_services.search_model_test(model=model, query="shoes")
            assert refused.value.reason == SITE_BUSY
        silent.release.set()
        assert all(future.result(timeout=30).ok for future in held)
    assert len(silent.received) == 2  # the refused ones sent nothing
    # turns given back
    assert endpoint_services.search_model_test(model=models[1], query="shoes").ok


def test_the_api_answers_a_test_over_the_site_cap_with_429_and_the_reason(
        silent, settings, personas):
    settings.OUTBOUND_TESTS_SITE_WIDE = 2
    settings.OUTBOUND_TEST_DEADLINE_SECONDS = 30
    others = [model_of(TeamFactory(name=f"T{n}"), f"{silent.url}/{n}") for n in range(2)]
    mine = model_of(personas.team, f"{silent.url}/mine")
    api = APIClient()
    api.force_authenticate(personas.lead)
    with ThreadPoolExecutor(2) as pool:
        held = [pool.submit(endpoint_services.search_model_test, model=model, query="shoes")
                for model in others]
        wait_until(lambda: len(silent.received) == 2, "two Tests at the engine", timeout=10)
        answer = api.post(f"/api/v1/models/{mine.pk}/test/", {"query": "shoes"}, format="json")
        silent.release.set()
        [future.result(timeout=30) for future in held]
    assert (answer.status_code, answer.json()) == (429, {"detail": SITE_BUSY})


def test_the_site_cap_defaults_to_half_the_web_workers():
    import subprocess
    import sys

    from tests.workers import REPO

    # The settings module alone, in a clean environment: reading a value needs no
    # django.setup(), which loaded every app (2 s a process on a busy machine).
    def default(environ):
        return subprocess.run(
            [sys.executable, "-c", "import searchtweak.settings as settings; "
             "print(settings.OUTBOUND_TESTS_SITE_WIDE)"],
            cwd=REPO, env={**environ, "PATH": "/usr/bin:/bin"}, capture_output=True,
            text=True, check=True).stdout.strip()

    assert default({"WEB_CONCURRENCY": "4"}) == "2"
    assert default({"WEB_CONCURRENCY": "1"}) == "1"
    assert default({"WEB_CONCURRENCY": "4", "OUTBOUND_TESTS_SITE_WIDE": "3"}) == "3"


def test_one_person_may_own_only_so_many_teams(settings, client):
    settings.TEAMS_PER_USER = 2
    user = UserFactory(username="founder")
    for n in range(2):
        Membership.objects.create(team=TeamFactory(name=f"Mine {n}"), user=user,
                                  role=Role.OWNER)
    Membership.objects.create(team=TeamFactory(name="Theirs"), user=user, role=Role.ADMIN)
    api = APIClient()
    api.force_authenticate(user)
    answer = api.post("/api/v1/teams/", {"name": "Third"}, format="json")
    assert answer.status_code == 403
    assert "You own 2 teams, the most one person may create here (TEAMS_PER_USER)" in \
        answer.json()["detail"]
    client.force_login(user)
    assert client.post(reverse("team_create"), {"name": "Third"}).status_code == 403
    assert not Team.objects.filter(name="Third").exists()
    # Staff are not held to it; an admin (not owner) elsewhere does not count.
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    assert api.post("/api/v1/teams/", {"name": "Third"}, format="json").status_code == 201
