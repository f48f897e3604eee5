"""Demo data so `make run` shows a working application with nothing else installed.

The demo evaluation is fetched here, in-process: `make run` seeds before it serves, so no
server answers /demo/search yet. The fetch goes through the same code path as any fetch
(fetching.services.keywords_fetch: request building, httpx, size cap, JSON, mapper, snapshots
and the snapshots_created signal), with an httpx transport that calls the demo engine's search
function directly instead of opening a socket (evaluations.demo.in_process_transport).

The demo evaluation runs the demo query set's version 1: fifty shoppers' queries with how
often each is asked and a few tags, tagged head, torso and tail by that traffic.

Seeding is quiet (seeding_quietly): no eager task's log line and no notification mail on the
console, so `make run` (which serves through serve_demo) ends with the logins.

The demo evaluation carries no grader routing tag: every grader of the Demo team gets its
work at once (an evaluations command may not set judgments' grader tags, and a tag nobody
carries left the graders with nothing to grade). Re-running the command repairs a database
seeded before: it drops the old "demo" tag and points the endpoint at the current address.
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.management.base import BaseCommand, OutputWrapper
from django.core.management.color import Style
from django.db import transaction
from django.test.utils import override_settings

from evaluations import demo
from evaluations.endpoints import services as endpoint_services
from evaluations.fetching import services as fetch_services
from evaluations.models import Endpoint, Evaluation, Keyword, KeywordSet, SearchModel
from evaluations.query_sets import services as query_set_services
from evaluations.services import configuration, lifecycle
from evaluations.services.keywords import KeywordEntry
from searchtweak.models import Membership, Role, Team, User

DEMO_USERS = [
    # The team's owner: configures endpoints and models (leads may not).
    ("admin", Role.OWNER),
    ("lead", Role.LEAD),
    ("grader1", Role.GRADER),
    ("grader2", Role.GRADER),
    ("grader3", Role.GRADER),
    # Reads the dashboards and comparisons; grades nothing, sees no grader's name.
    ("viewer", Role.VIEWER),
]
ENDPOINT_NAME = "Demo product search"
MODEL_NAME = "Demo BM25"
EVALUATION_NAME = "Demo: product search relevance"
# The demo shop's queries (demo.SHOPPERS_QUERIES) with how often each is asked and whether
# it names a kind of product (broad) or one with its traits (specific). The demo query set
# tags them head / torso / tail by that traffic too, so segments show from the first minute.
DEMO_QUERIES = [KeywordEntry(text, weight, ("intent:" + intent, "lang:en"))
                for text, weight, intent in demo.SHOPPERS_QUERIES]
DEMO_KEYWORDS = [query.text for query in DEMO_QUERIES]
QUERY_SET_NAME = "Demo: shoppers' queries"
# Demo evaluations seeded before carried this tag, which no grader carried.
OLD_ROUTING_TAG = "demo"
METRICS = [{"code": "precision", "k": 10, "params": {}}, {"code": "ap", "k": 10, "params": {}},
           {"code": "ndcg", "k": 10, "params": {}}]


@contextmanager
def seeding_quietly() -> Iterator[None]:
    """Build the demo without noise: embedded Celery logs every eager task (thousands of
    grades), and the console mail backend would print each notification the seeding
    triggers to the demo's users (their in-app notifications are still stored)."""
    trace = logging.getLogger("celery.app.trace")
    level = trace.level
    trace.setLevel(logging.WARNING)
    try:
        with override_settings(EMAIL_BACKEND="django.core.mail.backends.dummy.EmailBackend"):
            yield
    finally:
        trace.setLevel(level)


def write_logins(stdout: OutputWrapper, style: Style, password: str) -> None:
    stdout.write(style.SUCCESS("Demo team ready. Log in with:"))
    for username, role in DEMO_USERS:
        stdout.write(f"  {username} / {password}  ({role.label})")


def fetch_now(evaluation: Evaluation) -> list[int]:
    """Start the evaluation (or retry its failed keywords) and fetch what waits from the demo
    engine, synchronously and in-process; the keywords tried."""
    if evaluation.status == Evaluation.Status.PENDING and evaluation.started_at is None:
        evaluation = lifecycle.evaluation_start(evaluation=evaluation, enqueue=False)
    elif evaluation.status == Evaluation.Status.ACTIVE:
        # Keywords that failed in an earlier run (the server was not up) get another try.
        evaluation = lifecycle.evaluation_retry_failed(evaluation=evaluation, enqueue=False)
    if evaluation.status != Evaluation.Status.FETCHING:
        return []
    waiting = list(evaluation.keywords.filter(fetch_status=Keyword.FetchStatus.PENDING)
                   .values_list("pk", flat=True))
    fetch_services.keywords_fetch(evaluation_id=evaluation.pk, keyword_ids=waiting,
                                  transport=demo.in_process_transport())
    return waiting


class Command(BaseCommand):
    help = ("Create the Demo team (a lead and three graders), the demo search engine's "
            "endpoint and model, and a fetched evaluation. Safe to run twice.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--password", default="demo")
        parser.add_argument(
            "--demo-url", default=settings.DEMO_SEARCH_URL,
            help="Where the demo engine is served: a base address (http://127.0.0.1:8100) or "
                 "the full search URL (default: %(default)s).")

    def handle(self, *args, password: str, demo_url: str, **options) -> None:
        demo_url = demo.search_url(demo_url)
        with seeding_quietly():
            team, lead = self._team_and_users(password)
            product_count = demo.catalog_ensure()
            evaluation = self._demo_evaluation(team, lead, demo_url)
            attempted = fetch_now(evaluation)
        evaluation.refresh_from_db()
        self.stdout.write(self.style.SUCCESS(
            f"Demo catalog: {product_count} products, served at {demo_url}?q=…"))
        self._report_fetch(evaluation, attempted)
        write_logins(self.stdout, self.style, password)

    @transaction.atomic
    def _team_and_users(self, password: str) -> tuple[Team, User]:
        team = Team.objects.filter(name="Demo").order_by("id").first() or Team.objects.create(
            name="Demo"
        )
        users = {}
        # One hash for the six accounts: they share a published password anyway, and each
        # hash is a deliberate ~0.8 s of PBKDF2 that a newcomer waits for at `make run`.
        encoded = make_password(password)
        for username, role in DEMO_USERS:
            user = User.objects.filter(username=username).first()
            if user is None:
                user = User(username=username, email=f"{username}@demo.invalid")
            user.password = encoded
            user.current_team = team
            user.save()
            Membership.objects.update_or_create(team=team, user=user, defaults={"role": role})
            users[username] = user
        return team, users["lead"]

    @transaction.atomic
    def _demo_evaluation(self, team: Team, lead: User, demo_url: str) -> Evaluation:
        endpoint = Endpoint.objects.filter(team=team, name=ENDPOINT_NAME).first()
        if endpoint is None:
            endpoint = endpoint_services.endpoint_create(
                team=team, created_by=None, name=ENDPOINT_NAME, url=demo_url,
                mapper=demo.DEMO_MAPPER, timeout_seconds=10.0)
        elif endpoint.url != demo_url:
            # Served on another port than last time: later fetches must reach this server.
            endpoint = endpoint_services.endpoint_update(endpoint=endpoint, url=demo_url)
        model = SearchModel.objects.filter(team=team, name=MODEL_NAME).first()
        if model is None:
            model = endpoint_services.search_model_create(
                team=team, created_by=None, endpoint=endpoint, name=MODEL_NAME,
                params={"q": "#query#", "size": "10"},
                description="The demo engine's full-text ranking (bm25 / ts_rank_cd).",
                default_keywords="\n".join(DEMO_KEYWORDS[:10]))
        query_set = self._demo_query_set(team, lead)
        evaluation = Evaluation.objects.filter(team=team, name=EVALUATION_NAME).first()
        if evaluation is None:
            evaluation = query_set_services.evaluation_create_from_query_set(
                query_set=query_set, team=team, created_by=lead, model=model,
                name=EVALUATION_NAME,
                description="Fifty shoppers' queries against the demo catalog. Grade each "
                            "result 0 (poor) to 3 (perfect).",
                scale="graded", strategy=3, metrics=METRICS,
                guidelines="3: exactly what was asked for. 2: close (other color or "
                           "audience). 1: same category, different product. 0: unrelated.")
        elif OLD_ROUTING_TAG in evaluation.tags and evaluation.status != Evaluation.Status.FINISHED:
            evaluation = configuration.evaluation_update(
                evaluation=evaluation,
                tags=[tag for tag in evaluation.tags if tag != OLD_ROUTING_TAG])
        return evaluation

    def _demo_query_set(self, team: Team, lead: User) -> KeywordSet:
        """The demo's query set: its queries with their weights and tags, traffic segments
        on. A database seeded before it existed gets it now."""
        query_set = KeywordSet.objects.filter(team=team, name=QUERY_SET_NAME,
                                              archived_at=None).first()
        if query_set is None:
            query_set = query_set_services.query_set_create(
                team=team, created_by=lead, name=QUERY_SET_NAME, keywords=DEMO_QUERIES,
                description="What shoppers ask the demo shop, weighted by a day's searches.",
                traffic_segments=True)
        return query_set

    def _report_fetch(self, evaluation: Evaluation, attempted: list[int]) -> None:
        keywords = evaluation.keywords
        fetched = keywords.filter(fetch_status=Keyword.FetchStatus.FETCHED).count()
        failed = keywords.filter(fetch_status=Keyword.FetchStatus.FAILED)
        failed_count = failed.count()
        style = self.style.ERROR if failed_count else self.style.SUCCESS
        self.stdout.write(style(
            f"Demo evaluation '{evaluation.name}' is {evaluation.status}: "
            f"{fetched} of {keywords.count()} keywords fetched, {failed_count} failed"
            f"{f' ({len(attempted)} tried just now)' if attempted else ''}."))
        first_failed = failed.order_by("position").first()
        if first_failed is not None:
            self.stdout.write(self.style.ERROR(
                f"First error ({first_failed.text!r}): {first_failed.fetch_error}"))
