"""The access matrix: every URL pattern by every persona, and the exact status it answers.

Personas: the owner, an admin, a lead, a grader and a viewer of one team, the owner of
another team ("other", who must get a 404 on this team's objects), an anonymous visitor and
a visitor holding a share link of the team ("shared": no account, the link opened first,
so nothing but the link's own page may answer them otherwise than the anonymous). Every URL
the resolver knows must have a row in TABLE: a new pattern fails
test_every_url_pattern_has_a_row until someone decides who may use it.

A row names the kwargs to fill (this team's objects) and, for each method that matters,
the eight outcomes in PERSONAS order: a status code, LOGIN (302 to the login page) or
ADMIN_LOGIN (302 to the admin's login page). Pages get GET; actions and unsafe API methods
get their method with an empty body, so access answers before validation does. Each
request runs in a transaction that is rolled back, so an owner's DELETE leaves the object
for the next persona; the dataset is built once for the module.

Two more checks run over the same table: every method a view does not list is refused
(405), HTML pages as well as API views, so a page that starts to accept another method
must be decided here; and a grader sees no other grader's grade anywhere: every row is
requested again by the grader against an evaluation graded independently by another
grader and a judge (tests/judgments/visibility_data.py), and their markers must not appear;
the viewer and the share link's visitor, who read results only, see no person's name and no
endpoint's address either.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.cookies import SimpleCookie
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.views import APIView

from behaviour.learning import click_grader_create
from behaviour.services import behaviour_source_import_csv
from evaluations.models import Evaluation, Keyword, KeywordSet, SearchModel
from evaluations.query_sets.services import query_set_create
from judges.models import Judge, JudgeCall, JudgeRun
from judgments import views as judgment_views
from judgments.models import FeedbackSlot, Transformer
from judgments.scale_writes import scale_create
from notifications.delivery import unsubscribe_token
from notifications.models import Notification
from notifications.services import webhook_create
from schedules.models import Schedule, ScheduleRun
from schedules.services import schedule_create
from searchtweak import healthz
from searchtweak.models import Membership, Role, Team, User
from searchtweak.services import api_token_create, invitation_create
from sharing.services import share_link_create
from tests.judges.calibration_data import make_judge
from tests.judges.run_builders import call_of, judge_of, run_of
from tests.judgments.builders import evaluation_with_slots
from tests.judgments.visibility_data import (
    JUDGE_REASON,
    SECOND_GRADER,
    SECOND_NOTE,
    VIEWER_NOTE,
    IndependentGrading,
    independent_grading,
)
from tests.searchtweak.factories import TeamFactory, member

PERSONAS = ("owner", "admin", "lead", "grader", "viewer", "other", "anonymous", "shared")
LOGIN = "login"
ADMIN_LOGIN = "admin-login"

pytestmark = pytest.mark.django_db


@dataclass
class Dataset:
    team: Team
    users: dict[str, User | None]
    evaluation: Evaluation
    second_evaluation: Evaluation
    keyword: Keyword
    snapshot_id: int
    slot: FeedbackSlot
    model: SearchModel
    scale_id: int
    transformer: Transformer
    grader_membership: Membership
    invitation_token: str
    grader_token_id: int
    judge: Judge
    judge_run: JudgeRun
    judge_call: JudgeCall
    graded: IndependentGrading | None = None
    graded_again: IndependentGrading | None = None
    query_set: KeywordSet | None = None
    schedule: Schedule | None = None
    webhook_id: int = 0
    notification_id: int = 0  # the grader's
    unsubscribe_token: str = ""  # the grader's, for run_regressed
    behaviour_source_id: int = 0
    click_grader_judge_id: int = 0  # a clicks grader learning from the CSV source
    share_link_id: int = 0
    share_token: str = ""  # the dashboard of `evaluation`
    share_compare_token: str = ""  # `second_evaluation` against `evaluation`
    # The same two links to the independently graded evaluations (_graded_dataset).
    graded_share_token: str = ""
    graded_share_compare_token: str = ""
    # One signed-in Client per persona and the cookies it signed in with (_client).
    clients: dict[str, Client] = field(default_factory=dict)
    cookies: dict[str, SimpleCookie] = field(default_factory=dict)


def _build() -> Dataset:
    team = TeamFactory(name="Acme")
    other_team = TeamFactory(name="Other")
    users: dict[str, User | None] = {
        "owner": member(team, Role.OWNER, "owner"),
        "admin": member(team, Role.ADMIN, "admin"),
        "lead": member(team, Role.LEAD, "lead"),
        "grader": member(team, Role.GRADER, "grader"),
        "viewer": member(team, Role.VIEWER, "viewer"),
        "other": member(other_team, Role.OWNER, "other"),
        "anonymous": None,
        "shared": None,
    }
    evaluation = evaluation_with_slots(team, keywords=1, positions=1)
    second_evaluation = evaluation_with_slots(team, keywords=1, positions=1)
    slot = FeedbackSlot.objects.filter(evaluation=evaluation).select_related("keyword").get()
    # The grader holds the slot: the grading page shows a slot to its holder only.
    FeedbackSlot.objects.filter(pk=slot.pk).update(
        user=users["grader"], assigned_at=timezone.now(),
        lease_expires_at=timezone.now() + timezone.timedelta(hours=1))
    scale = scale_create(team=team, code="stars", name="Stars", lo=1, hi=2,
                         labels={"1": {"label": "Bad", "color": "#d92d20"},
                                 "2": {"label": "Good", "color": "#079455"}})
    transformer = Transformer.objects.create(team=team, source="graded", target="binary",
                                             mapping={"0": 0, "1": 0, "2": 1, "3": 1})
    invitation = invitation_create(team=team, invited_by=users["owner"],
                                   invitee="newcomer@example.test", role=Role.GRADER)
    token, _ = api_token_create(user=users["grader"], name="laptop")
    judge_run = run_of(judge_of(team), evaluation, started_by=users["lead"])
    # Two evaluations with the same keyword that another grader and a judge graded beside
    # the grader, for the check that the grader sees none of their grades.
    graded = independent_grading(team, users["grader"])
    graded_again = independent_grading(team, users["grader"], second=graded.second,
                                       judge_name="Echo two")
    query_set = query_set_create(team=team, created_by=users["lead"], name="Shoes",
                                 keywords=["boots", "hat"])
    schedule = schedule_create(team=team, created_by=users["lead"], name="Nightly",
                               model=evaluation.model, query_set=query_set, scale="graded",
                               strategy=1, metrics=[{"code": "ndcg", "k": 10, "params": {}}],
                               interval_minutes=60, baseline=Schedule.Baseline.FIRST)
    ScheduleRun.objects.create(schedule=schedule, evaluation=second_evaluation,
                               due_at=timezone.now(), deadline_at=timezone.now())
    share_link, share_token = share_link_create(evaluation=evaluation, created_by=users["lead"],
                                                days=7)
    _, share_compare_token = share_link_create(
        evaluation=evaluation, other_evaluation=second_evaluation, created_by=users["lead"],
        days=7)
    _, graded_share_token = share_link_create(evaluation=graded.evaluation,
                                              created_by=users["lead"], days=7)
    _, graded_share_compare_token = share_link_create(
        evaluation=graded.evaluation, other_evaluation=graded_again.evaluation,
        created_by=users["lead"], days=7)
    behaviour_source = behaviour_source_import_csv(
        team=team, user=users["lead"], name="Counts",
        lines=["keyword,doc_id,position,impressions,clicks", "boots,d1,1,10,2"])
    return Dataset(
        click_grader_judge_id=click_grader_create(
            team=team, by=users["admin"], name="Learned", source=behaviour_source,
            click_model="pbm").judge_id,
        share_link_id=share_link.pk, share_token=share_token,
        share_compare_token=share_compare_token, graded_share_token=graded_share_token,
        graded_share_compare_token=graded_share_compare_token,
        team=team, users=users, evaluation=evaluation, second_evaluation=second_evaluation,
        keyword=slot.keyword, snapshot_id=slot.snapshot_id, slot=slot, model=evaluation.model,
        scale_id=scale.pk, transformer=transformer,
        grader_membership=users["grader"].memberships.get(),
        invitation_token=invitation.token, grader_token_id=token.pk,
        judge=make_judge(team),
        judge_run=judge_run, judge_call=call_of(judge_run.judge, run=judge_run),
        graded=graded, graded_again=graded_again,
        query_set=query_set, schedule=schedule,
        webhook_id=webhook_create(team=team, created_by=users["admin"],
                                  url="http://127.0.0.1:9/hook",
                                  events=["run_regressed"])[0].pk,
        notification_id=Notification.objects.create(
            user=users["grader"], team=team, event="run_regressed", text="nDCG fell").pk,
        unsubscribe_token=unsubscribe_token(user_id=users["grader"].pk,
                                            event="run_regressed"),
        behaviour_source_id=behaviour_source.pk,
    )


@pytest.fixture(scope="module")
def dataset(django_db_setup, django_db_blocker):
    # One dataset for every row; each request rolls back what it changed.
    # With a broker (.ci/run) /healthz answers 503 for a queue no worker consumes: here
    # every queue is as a running deployment's, consumed within the last day.
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        for queue in settings.WORKER_QUEUES:
            healthz.heartbeat_store(queue=queue)
    with django_db_blocker.unblock(), transaction.atomic(), override_settings(
            WORKER_HEARTBEAT_STALE_SECONDS=86_400):
        built = _build()
        # Signed in once, inside the module's transaction, so every request's rollback
        # keeps the sessions: six logins per row were a fifth of the matrix's time.
        for persona, user in built.users.items():
            client = Client()
            if user is not None:
                client.force_login(user)
            if persona == "shared":
                assert client.get(f"/s/{built.share_token}/").status_code == 200
            built.clients[persona] = client
            built.cookies[persona] = copy.deepcopy(client.cookies)
        yield built
        transaction.set_rollback(True)


# --- the table ---------------------------------------------------------------------------

Outcome = int | str
Outcomes = tuple[Outcome, Outcome, Outcome, Outcome, Outcome, Outcome, Outcome, Outcome]
Fill = Callable[[Dataset], dict]


@dataclass(frozen=True)
class Row:
    kwargs: Fill
    query: Fill
    methods: dict[str, Outcomes]
    path: str = ""  # for the admin's unnamed patterns, which reverse cannot build


def row(kwargs: Fill | None = None, *, query: Fill | None = None, path: str = "",
        **methods: Outcomes) -> Row:
    return Row(kwargs or (lambda d: {}), query or (lambda d: {}), methods, path)


def _endpoint(d: Dataset) -> dict:
    return {"endpoint_id": d.model.endpoint_id}


def _model(d: Dataset) -> dict:
    return {"model_id": d.model.pk}


def _evaluation(d: Dataset) -> dict:
    return {"evaluation_id": d.evaluation.pk}


def _two_evaluations(d: Dataset) -> dict:
    return {"evaluation_id": d.evaluation.pk, "other_id": d.second_evaluation.pk}


def _start(d: Dataset) -> dict:
    return {"evaluation_id": d.evaluation.pk, "action": "start"}


def _keyword(d: Dataset) -> dict:
    return {"keyword_id": d.keyword.pk}


def _query_set(d: Dataset) -> dict:
    return {"query_set_id": d.query_set.pk}


def _schedule(d: Dataset) -> dict:
    return {"schedule_id": d.schedule.pk}


def _query_set_version(d: Dataset) -> dict:
    return {"query_set_id": d.query_set.pk, "number": 1}


def _snapshot(d: Dataset) -> dict:
    return {"snapshot_id": d.snapshot_id}


def _slot(d: Dataset) -> dict:
    return {"slot_id": d.slot.pk}


def _slot_item(d: Dataset) -> dict:
    return {"token": judgment_views.item_token(judgment_views.ITEM_SLOT, d.slot.pk)}


def _scale(d: Dataset) -> dict:
    return {"scale_id": d.scale_id}


def _transformer(d: Dataset) -> dict:
    return {"transformer_id": d.transformer.pk}


def _grader_user(d: Dataset) -> dict:
    return {"user_id": d.users["grader"].pk}


def _team(d: Dataset) -> dict:
    return {"team_id": d.team.pk}


def _membership(d: Dataset) -> dict:
    return {"membership_id": d.grader_membership.pk}


def _invitation(d: Dataset) -> dict:
    return {"token": d.invitation_token}


def _api_token(d: Dataset) -> dict:
    return {"token_id": d.grader_token_id}


def _judge(d: Dataset) -> dict:
    return {"judge_id": d.judge.pk}


def _click_grader(d: Dataset) -> dict:
    return {"judge_id": d.click_grader_judge_id}


def _evaluation_snapshot(d: Dataset) -> dict:
    return {"evaluation_id": d.evaluation.pk, "snapshot_id": d.snapshot_id}


def _judge_evaluation_query(d: Dataset) -> dict:
    return {"evaluation": d.evaluation.pk}


def _reset_link(d: Dataset) -> dict:
    return {"uidb64": "MQ", "token": "not-a-token"}


def _estimate_query(d: Dataset) -> dict:
    return {"judge": d.judge_run.judge_id, "mode": "shadow"}


def _judge_run(d: Dataset) -> dict:
    return {"run_id": d.judge_run.pk}


def _run_judge(d: Dataset) -> dict:
    return {"judge_id": d.judge_run.judge_id}


def _judge_call(d: Dataset) -> dict:
    return {"call_id": d.judge_call.pk}


def _webhook(d: Dataset) -> dict:
    return {"webhook_id": d.webhook_id}


def _behaviour_source(d: Dataset) -> dict:
    return {"source_id": d.behaviour_source_id}


def _behaviour_source_evaluation(d: Dataset) -> dict:
    return {"source_id": d.behaviour_source_id, "evaluation_id": d.evaluation.pk}


def _notification(d: Dataset) -> dict:
    return {"notification_id": d.notification_id}


def _unsubscribe(d: Dataset) -> dict:
    return {"token": d.unsubscribe_token}


def _compare_query(d: Dataset) -> dict:
    return {"a": d.evaluation.pk, "b": d.second_evaluation.pk}


def _compare_many_query(d: Dataset) -> dict:
    return {"evaluation": [d.evaluation.pk, d.second_evaluation.pk]}


def _share_token(d: Dataset) -> dict:
    return {"token": d.share_token}


def _share_link(d: Dataset) -> dict:
    return {"link_id": d.share_link_id}


def _share_query(d: Dataset) -> dict:
    return {"evaluation": d.evaluation.pk}


def _compare_keyword_query(d: Dataset) -> dict:
    return {"a": d.evaluation.pk, "b": d.second_evaluation.pk, "keyword": d.keyword.text}


# Columns: (owner, admin, lead, grader, viewer, other team's owner, anonymous, shared). A
# page or a list of "the current team" answers the other team's owner about their own team
# (200); an object of this team answers them 404. The API answers an anonymous caller 401.
# The viewer gets what a check naming access.READS_ROLE lets them (dashboards, comparisons,
# model history, verdicts and their APIs) and their own account's pages; every check for
# the grader or above answers them 403. The share link's visitor is an anonymous visitor
# everywhere but on the link's own page.
TABLE: dict[str, Row] = {
    # --- api ---
    "api:me": row(GET=(200, 200, 200, 200, 200, 200, 401, 401)),
    "api:teams": row(
        GET=(200, 200, 200, 200, 200, 200, 401, 401),
        POST=(400, 400, 400, 400, 400, 400, 401, 401)),
    "api:team": row(_team, GET=(200, 200, 200, 200, 403, 404, 401, 401)),
    "api:team_invitations": row(_team, POST=(400, 400, 403, 403, 403, 404, 401, 401)),
    # A team's audit trail is its owners' alone, as on its page.
    "api:team_audit": row(_team, GET=(200, 403, 403, 403, 403, 404, 401, 401)),
    # Notifications are the caller's own; webhooks are a team admin's.
    "notifications_api:notifications": row(GET=(200, 200, 200, 200, 200, 200, 401, 401)),
    # Behaviour is the team's: every member reads it; another team's owner lists their own
    # (none) and finds no other team's source.
    # A lead opens a collector source and posts batches to it.
    "behaviour_api:sources": row(GET=(200, 200, 200, 200, 200, 200, 401, 401),
                                 POST=(400, 400, 400, 403, 403, 400, 401, 401)),
    "behaviour_api:source_keywords": row(_behaviour_source,
                                         GET=(200, 200, 200, 200, 403, 404, 401, 401)),
    "behaviour_api:source_events": row(_behaviour_source,
                                       POST=(400, 400, 400, 403, 403, 404, 401, 401)),
    "behaviour_api:evaluation_online": row(_behaviour_source_evaluation,
                                           GET=(200, 200, 200, 200, 403, 404, 401, 401)),
    "behaviour_api:evaluation_online_csv": row(_behaviour_source_evaluation,
                                               GET=(200, 200, 200, 200, 403, 404, 401, 401)),
    # An evaluation against the team's newest source: every member but the viewer reads it
    # (this one has no metric to set against it, which the 400 names).
    "behaviour_api:evaluation_behaviour_fit": row(
        _evaluation, GET=(400, 400, 400, 400, 403, 404, 401, 401)),
    # Clicks graders are judges: leads list them, admins make them (an empty body: 400).
    "behaviour_api:click_graders": row(GET=(200, 200, 200, 403, 403, 200, 401, 401),
                                       POST=(400, 400, 403, 403, 403, 400, 401, 401)),
    # One reads as the list does; admins change it (an empty PATCH changes nothing: 200).
    "behaviour_api:click_grader": row(_click_grader,
                                      GET=(200, 200, 200, 403, 403, 404, 401, 401),
                                      PATCH=(200, 200, 403, 403, 403, 404, 401, 401)),
    # A run's learned grades, a page at a time: its readers', as its CSV and JSON Lines.
    "behaviour_api:run_learned": row(_judge_run, GET=(200, 200, 200, 403, 403, 404, 401, 401)),
    "notifications_api:notifications_read_all": row(POST=(200, 200, 200, 200, 200, 200, 401, 401)),
    "notifications_api:notification_read": row(_notification,
                                               POST=(404, 404, 404, 200, 404, 404, 401, 401)),
    "notifications_api:team_webhooks": row(_team, GET=(200, 200, 403, 403, 403, 404, 401, 401),
                                           POST=(400, 400, 403, 403, 403, 404, 401, 401)),
    "notifications_api:webhook": row(_webhook, GET=(200, 200, 403, 403, 403, 404, 401, 401),
                                     PATCH=(200, 200, 403, 403, 403, 404, 401, 401),
                                     DELETE=(204, 204, 403, 403, 403, 404, 401, 401)),
    "notifications_api:webhook_test": row(_webhook, POST=(202, 202, 403, 403, 403, 404, 401, 401)),
    # --- evaluations_api ---
    "evaluations_api:endpoints": row(
        GET=(200, 200, 200, 200, 200, 200, 401, 401),
        POST=(400, 400, 403, 403, 403, 400, 401, 401),
    ),
    "evaluations_api:endpoint": row(
        _endpoint,
        GET=(200, 200, 403, 403, 403, 404, 401, 401),
        PATCH=(200, 200, 403, 403, 403, 404, 401, 401),
        DELETE=(200, 200, 403, 403, 403, 404, 401, 401),
    ),
    "evaluations_api:endpoint_restore": row(_endpoint,
                                            POST=(200, 200, 403, 403, 403, 404, 401, 401)),
    "evaluations_api:models": row(
        GET=(200, 200, 200, 200, 200, 200, 401, 401),
        POST=(400, 400, 403, 403, 403, 400, 401, 401),
    ),
    "evaluations_api:model": row(
        _model,
        GET=(200, 200, 403, 403, 403, 404, 401, 401),
        PATCH=(200, 200, 403, 403, 403, 404, 401, 401),
        DELETE=(200, 200, 403, 403, 403, 404, 401, 401),
    ),
    "evaluations_api:model_restore": row(_model, POST=(200, 200, 403, 403, 403, 404, 401, 401)),
    "evaluations_api:model_test": row(_model, POST=(400, 400, 400, 403, 403, 404, 401, 401)),
    "evaluations_api:models_offline": row(POST=(400, 400, 403, 403, 403, 400, 401, 401)),
    # Multipart only: an empty JSON body is the wrong media type once access is granted.
    "evaluations_api:model_run": row(_model, POST=(415, 415, 403, 403, 403, 404, 401, 401)),
    "evaluations_api:evaluations": row(
        GET=(200, 200, 200, 200, 200, 200, 401, 401),
        POST=(400, 400, 400, 403, 403, 400, 401, 401),
    ),
    "evaluations_api:evaluation": row(
        _evaluation,
        GET=(200, 200, 200, 200, 403, 404, 401, 401),
        PATCH=(200, 200, 200, 403, 403, 404, 401, 401),
        DELETE=(204, 204, 204, 403, 403, 404, 401, 401),
    ),
    "evaluations_api:evaluation_clone": row(_evaluation,
                                            POST=(201, 201, 201, 403, 403, 404, 401, 401)),
    "evaluations_api:evaluation_archive": row(_evaluation,
                                              POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    "evaluations_api:evaluation_restore": row(_evaluation,
                                              POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    "evaluations_api:evaluation_start": row(_evaluation,
                                            POST=(400, 400, 400, 403, 403, 404, 401, 401)),
    "evaluations_api:evaluation_pause": row(_evaluation,
                                            POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    "evaluations_api:evaluation_finish": row(_evaluation,
                                             POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    "evaluations_api:evaluation_retry_failed": row(
        _evaluation,
        POST=(200, 200, 200, 403, 403, 404, 401, 401),
    ),
    # --- evaluations_api: query sets (members read, leads write) ---
    "evaluations_api:query_sets": row(
        GET=(200, 200, 200, 200, 200, 200, 401, 401),
        POST=(400, 400, 400, 403, 403, 400, 401, 401),
    ),
    "evaluations_api:query_set": row(
        _query_set,
        GET=(200, 200, 200, 200, 403, 404, 401, 401),
        PATCH=(200, 200, 200, 403, 403, 404, 401, 401),
    ),
    # An empty body names no keywords: 400 once access lets the caller in.
    "evaluations_api:query_set_versions": row(_query_set,
                                              POST=(400, 400, 400, 403, 403, 404, 401, 401)),
    "evaluations_api:query_set_version_keywords": row(
        _query_set_version, GET=(200, 200, 200, 200, 403, 404, 401, 401)),
    "evaluations_api:query_set_archive": row(_query_set,
                                             POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    "evaluations_api:query_set_restore": row(_query_set,
                                             POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    # --- evaluations_api: schedules (members read, leads write) ---
    "schedules_api:schedules": row(
        GET=(200, 200, 200, 200, 200, 200, 401, 401),
        POST=(400, 400, 400, 403, 403, 400, 401, 401),
    ),
    # An empty PATCH changes nothing (200).
    "schedules_api:schedule": row(
        _schedule,
        GET=(200, 200, 200, 200, 403, 404, 401, 401),
        PATCH=(200, 200, 200, 403, 403, 404, 401, 401),
        DELETE=(204, 204, 204, 403, 403, 404, 401, 401),
    ),
    "schedules_api:schedule_pause": row(_schedule, POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    "schedules_api:schedule_resume": row(_schedule, POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    "schedules_api:schedule_runs": row(_schedule, GET=(200, 200, 200, 200, 403, 404, 401, 401)),
    # --- judgments_api ---
    # The grader holds the one slot; nobody else has anything to grade (204).
    "judgments_api:next": row(_evaluation, POST=(204, 204, 204, 200, 403, 404, 401, 401)),
    "judgments_api:snapshots": row(_evaluation, GET=(200, 200, 200, 200, 403, 404, 401, 401)),
    "judgments_api:grade": row(_snapshot, POST=(400, 400, 400, 400, 403, 404, 401, 401)),
    # POST is a file upload: a JSON body is the wrong media type, once access let it in.
    "judgments_api:judgments": row(
        _evaluation,
        GET=(200, 200, 200, 403, 403, 404, 401, 401),
        POST=(415, 415, 415, 403, 403, 404, 401, 401),
    ),
    # Gold items: answers everyone is measured against, so leads and above
    # (access.GRADES_ROLE). An empty body is a 400 on `snapshot`; the import is a file
    # upload, so a JSON body is the wrong media type once access let it in.
    "judgments_api:gold": row(_evaluation, GET=(200, 200, 200, 403, 403, 404, 401, 401),
                              POST=(400, 400, 400, 403, 403, 404, 401, 401)),
    "judgments_api:gold_import": row(_evaluation, POST=(415, 415, 415, 403, 403, 404, 401, 401)),
    "judgments_api:scales": row(
        GET=(200, 200, 403, 403, 403, 200, 401, 401),
        POST=(400, 400, 403, 403, 403, 400, 401, 401),
    ),
    "judgments_api:scale": row(
        _scale,
        GET=(200, 200, 403, 403, 403, 404, 401, 401),
        PATCH=(200, 200, 403, 403, 403, 404, 401, 401),
        DELETE=(204, 204, 403, 403, 403, 404, 401, 401),
    ),
    "judgments_api:transformers": row(
        GET=(200, 200, 403, 403, 403, 200, 401, 401),
        POST=(400, 400, 403, 403, 403, 400, 401, 401),
    ),
    "judgments_api:transformer": row(
        _transformer,
        GET=(200, 200, 403, 403, 403, 404, 401, 401),
        PATCH=(400, 400, 403, 403, 403, 404, 401, 401),
        DELETE=(204, 204, 403, 403, 403, 404, 401, 401),
    ),
    # --- judges_api ---
    # As the pages: leads list judges (without their configuration); the rest is the admins'.
    "judges_api:judges": row(
        GET=(200, 200, 200, 403, 403, 200, 401, 401),
        POST=(400, 400, 403, 403, 403, 400, 401, 401),
    ),
    "judges_api:judge": row(
        _judge,
        GET=(200, 200, 403, 403, 403, 404, 401, 401),
        PATCH=(200, 200, 403, 403, 403, 404, 401, 401),
        DELETE=(204, 204, 403, 403, 403, 404, 401, 401),
    ),
    "judges_api:judge_test": row(_judge, POST=(400, 400, 403, 403, 403, 404, 401, 401)),
    "judges_api:judge_calibration": row(_judge, query=_judge_evaluation_query,
                                        GET=(200, 200, 200, 403, 403, 404, 401, 401)),
    # Without a finished shadow run the judge may not count: 400 on `counts` (or its absence).
    "judges_api:judge_counts": row(_judge, POST=(400, 400, 403, 403, 403, 404, 401, 401)),
    # The team's bar for counting (the caller's current team): leads read, admins change.
    "judges_api:trust_policy": row(GET=(200, 200, 200, 403, 403, 200, 401, 401),
                                   PUT=(400, 400, 403, 403, 403, 400, 401, 401)),
    # --- judges_api: runs and call logs (a running shadow run of a judge of the team) ---
    "judges_api:evaluation_runs": row(
        _evaluation,
        GET=(200, 200, 200, 403, 403, 404, 401, 401),
        POST=(400, 400, 400, 403, 403, 404, 401, 401),
    ),
    "judges_api:run_estimate": row(_evaluation, query=_estimate_query,
                                   GET=(200, 200, 200, 403, 403, 404, 401, 401)),
    "judges_api:run": row(_judge_run, GET=(200, 200, 200, 403, 403, 404, 401, 401)),
    "judges_api:run_pause": row(_judge_run, POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    # A running run cannot be resumed.
    "judges_api:run_resume": row(_judge_run, POST=(400, 400, 400, 403, 403, 404, 401, 401)),
    "judges_api:run_cancel": row(_judge_run, POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    "judges_api:run_retry": row(_judge_run, POST=(200, 200, 200, 403, 403, 404, 401, 401)),
    "judges_api:run_failed": row(_judge_run, GET=(200, 200, 200, 403, 403, 404, 401, 401)),
    "judges_api:judge_calls": row(_run_judge, GET=(200, 200, 200, 403, 403, 404, 401, 401)),
    "judges_api:judge_calls_jsonl": row(_run_judge, GET=(200, 200, 200, 403, 403, 404, 401, 401)),
    # Judge-human triage: everyone's grades, so leads and above (access.GRADES_ROLE). An
    # empty body is a 400 on `grade`.
    "judges_api:evaluation_triage": row(_evaluation, GET=(200, 200, 200, 403, 403, 404, 401, 401)),
    "judges_api:snapshot_adjudicate": row(_evaluation_snapshot,
                                          POST=(400, 400, 400, 403, 403, 404, 401, 401)),
    # --- metrics_api ---
    "metrics_api:evaluation_keywords": row(_evaluation,
                                           GET=(200, 200, 200, 200, 200, 404, 401, 401)),
    "metrics_api:evaluation_metrics": row(_evaluation,
                                          GET=(200, 200, 200, 200, 200, 404, 401, 401)),
    "metrics_api:evaluation_compare": row(_two_evaluations,
                                          GET=(200, 200, 200, 200, 200, 404, 401, 401)),
    "metrics_api:compare_many": row(query=_compare_many_query,
                                    GET=(200, 200, 200, 200, 200, 404, 401, 401)),
    "metrics_api:evaluation_metric_table": row(_evaluation,
                                               GET=(200, 200, 200, 200, 200, 404, 401, 401)),
    # Every grade's aggregate, as the judgments' exports: leads and above. The dataset's
    # endpoint names no index, so those allowed get the 400 on `index`.
    "metrics_api:evaluation_rank_eval": row(_evaluation,
                                            GET=(400, 400, 400, 403, 403, 404, 401, 401)),
    # The gate stores a verdict (leads and above); the dataset's team has no baseline, so an
    # empty body is a 400 on `baseline`. Anyone of the team reads the stored verdicts.
    "metrics_api:evaluation_gate": row(_evaluation, POST=(400, 400, 400, 403, 403, 404, 401, 401)),
    "metrics_api:evaluation_verdicts": row(_evaluation,
                                           GET=(200, 200, 200, 200, 200, 404, 401, 401)),
    # --- searchtweak ---
    "home": row(GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN)),
    # A logged-in user is sent on (302 home).
    "login": row(
        GET=(302, 302, 302, 302, 302, 302, 200, 200),
        POST=(302, 302, 302, 302, 302, 302, 200, 200)),
    "logout": row(POST=(LOGIN, LOGIN, LOGIN, LOGIN, LOGIN, LOGIN, LOGIN, LOGIN)),
    # Single sign-on is off here (no OIDC_DISCOVERY_URL): both pages are absent. Configured,
    # they answer everyone alike (tests/sso: the start redirects to the provider, the
    # callback signs in or refuses; other methods 405).
    "sso:login": row(GET=(404, 404, 404, 404, 404, 404, 404, 404)),
    "sso:callback": row(GET=(404, 404, 404, 404, 404, 404, 404, 404)),
    "password_reset": row(
        GET=(200, 200, 200, 200, 200, 200, 200, 200),
        POST=(200, 200, 200, 200, 200, 200, 200, 200),
    ),
    "password_reset_done": row(GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    "password_reset_confirm": row(
        _reset_link,
        GET=(200, 200, 200, 200, 200, 200, 200, 200),
        POST=(200, 200, 200, 200, 200, 200, 200, 200),
    ),
    "password_reset_complete": row(GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    "account": row(
        GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN),
        POST=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN)),
    "password_change": row(
        GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN),
        POST=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN),
    ),
    "password_change_done": row(
        GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN),
        POST=(405, 405, 405, 405, 405, 405, LOGIN, LOGIN),
    ),
    "team_create": row(
        GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN),
        POST=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN),
    ),
    "team_switch": row(POST=(302, 302, 302, 302, 302, 302, LOGIN, LOGIN)),
    "team_detail": row(_team, GET=(200, 200, 200, 200, 403, 404, LOGIN, LOGIN)),
    "invitation_create": row(_team, POST=(400, 400, 403, 403, 403, 404, LOGIN, LOGIN)),
    "membership_change_role": row(_membership, POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN)),
    # The grader's own membership: leaving is open to them, removing them needs an admin.
    "membership_remove": row(_membership, POST=(302, 302, 403, 302, 403, 404, LOGIN, LOGIN)),
    # The link is for its invitee (not one of the personas) or a visitor about to log in.
    "invitation_detail": row(
        _invitation,
        GET=(404, 404, 404, 404, 404, 404, 200, 200),
        POST=(404, 404, 404, 404, 404, 404, 400, 400),
    ),
    "api_tokens": row(
        GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN),
        POST=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN),
    ),
    # A token is its owner's (the grader's) alone.
    "api_token_revoke": row(_api_token, POST=(404, 404, 404, 302, 404, 404, LOGIN, LOGIN)),
    "healthz": row(GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    # The operators' metrics answer no persona: they take a bearer token or an allowed
    # network, never a session, and are off (404) unless one is configured
    # (tests/monitoring/test_endpoint.py covers both).
    # A team's audit trail is its owners' alone.
    "team_audit": row(_team, GET=(200, 403, 403, 403, 403, 404, LOGIN, LOGIN)),
    "monitoring:metrics": row(GET=(404, 404, 404, 404, 404, 404, 404, 404)),
    # The user guide is for anyone, signed in or not
    # (docs/decisions/0011-the-user-guide-at-help.md).
    "guide:index": row(GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    "guide:page": row(lambda d: {"name": "metrics"}, GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    "notifications:notification_list": row(GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN)),
    "notifications:notification_bell": row(GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN)),
    "notifications:notification_read_all": row(POST=(302, 302, 302, 302, 302, 302, LOGIN, LOGIN)),
    "notifications:notification_read": row(_notification,
                                           POST=(404, 404, 404, 302, 404, 404, LOGIN, LOGIN)),
    "notifications:notification_preferences": row(
        GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN),
        POST=(302, 302, 302, 302, 302, 302, LOGIN, LOGIN)),
    # The signed link is the authority (a mail client's one-click POST has no session).
    "notifications:notification_unsubscribe": row(_unsubscribe,
                                                   GET=(200, 200, 200, 200, 200, 200, 200, 200),
                                                   POST=(200, 200, 200, 200, 200, 200, 200, 200)),
    "notifications:team_webhooks": row(_team, GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
                                       POST=(400, 400, 403, 403, 403, 404, LOGIN, LOGIN)),
    "notifications:webhook_detail": row(_webhook, GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN)),
    "notifications:webhook_test": row(_webhook, POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN)),
    "notifications:webhook_delete": row(_webhook,
                                        POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN)),
    # --- evaluations ---
    "evaluations:endpoint_list": row(GET=(200, 200, 200, 200, 403, 200, LOGIN, LOGIN)),
    "evaluations:endpoint_create": row(
        GET=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
    ),
    "evaluations:endpoint_edit": row(
        _endpoint,
        GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:endpoint_delete": row(
        _endpoint,
        GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
        POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:endpoint_restore": row(_endpoint,
                                        POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN)),
    "evaluations:model_list": row(GET=(200, 200, 200, 200, 403, 200, LOGIN, LOGIN)),
    "evaluations:model_create": row(
        GET=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
    ),
    "evaluations:offline_model_create": row(
        GET=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
    ),
    "evaluations:offline_run": row(
        _model,
        GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:model_edit": row(
        _model,
        GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:model_delete": row(
        _model,
        GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
        POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:model_restore": row(_model, POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN)),
    "evaluations:model_test": row(
        _model,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:evaluation_list": row(GET=(200, 200, 200, 200, 403, 200, LOGIN, LOGIN)),
    "evaluations:evaluation_create": row(
        GET=(200, 200, 200, 403, 403, 200, LOGIN, LOGIN),
        POST=(200, 200, 200, 403, 403, 200, LOGIN, LOGIN),
    ),
    "evaluations:evaluation_detail": row(_evaluation,
                                         GET=(200, 200, 200, 200, 403, 404, LOGIN, LOGIN)),
    "evaluations:evaluation_edit": row(
        _evaluation,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:evaluation_progress": row(_evaluation,
                                           GET=(200, 200, 200, 200, 403, 404, LOGIN, LOGIN)),
    "evaluations:evaluation_archive": row(
        _evaluation,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:evaluation_delete": row(
        _evaluation,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:evaluation_restore": row(_evaluation,
                                          POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "evaluations:evaluation_action": row(_start, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "evaluations:keyword_detail": row(_keyword, GET=(200, 200, 200, 200, 403, 404, LOGIN, LOGIN)),
    # Query sets: every member reads, leads and above write (as evaluations).
    "evaluations:query_set_list": row(GET=(200, 200, 200, 200, 403, 200, LOGIN, LOGIN)),
    "evaluations:query_set_create": row(
        GET=(200, 200, 200, 403, 403, 200, LOGIN, LOGIN),
        POST=(200, 200, 200, 403, 403, 200, LOGIN, LOGIN),
    ),
    "evaluations:query_set_detail": row(_query_set,
                                        GET=(200, 200, 200, 200, 403, 404, LOGIN, LOGIN)),
    "evaluations:query_set_edit": row(
        _query_set,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:query_set_archive": row(
        _query_set,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:query_set_restore": row(_query_set,
                                         POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "evaluations:query_set_from_evaluation": row(
        _evaluation,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
    ),
    # Schedules: every member reads, leads and above write (as query sets). An empty POST
    # is an unbound form: the page again (200).
    "schedules:schedule_list": row(GET=(200, 200, 200, 200, 403, 200, LOGIN, LOGIN)),
    "schedules:schedule_create": row(
        GET=(200, 200, 200, 403, 403, 200, LOGIN, LOGIN),
        POST=(200, 200, 200, 403, 403, 200, LOGIN, LOGIN),
    ),
    "schedules:schedule_detail": row(_schedule, GET=(200, 200, 200, 200, 403, 404, LOGIN, LOGIN)),
    "schedules:schedule_edit": row(
        _schedule,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
    ),
    "schedules:schedule_pause": row(_schedule, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "schedules:schedule_resume": row(_schedule, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "schedules:schedule_delete": row(
        _schedule,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN),
    ),
    "evaluations:demo_search": row(GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    # --- judgments ---
    "judgments:grade": row(GET=(200, 200, 200, 200, 403, 200, LOGIN, LOGIN)),
    # A slot page is for the grader who holds it; to the others of the team it is not there.
    "judgments:slot": row(
        _slot,
        GET=(404, 404, 404, 200, 403, 404, LOGIN, LOGIN),
        POST=(404, 404, 404, 400, 403, 404, LOGIN, LOGIN),
    ),
    # Skipping a slot you do not hold changes nothing and goes back to the queue.
    "judgments:skip": row(_slot, POST=(302, 302, 302, 302, 403, 404, LOGIN, LOGIN)),
    # The same slot by the page's opaque address; skipping there is for its holder alone.
    "judgments:item": row(
        _slot_item,
        GET=(404, 404, 404, 200, 403, 404, LOGIN, LOGIN),
        POST=(404, 404, 404, 400, 403, 404, LOGIN, LOGIN),
    ),
    "judgments:item_skip": row(_slot_item, POST=(404, 404, 404, 302, 403, 404, LOGIN, LOGIN)),
    "judgments:evaluation_grade": row(_evaluation,
                                      GET=(200, 200, 200, 200, 403, 404, LOGIN, LOGIN)),
    "judgments:feedback": row(_evaluation, GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    "judgments:lead_grade": row(_slot, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "judgments:reset": row(_slot, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "judgments:make_gold": row(_slot, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "judgments:pool_import": row(
        GET=(200, 200, 200, 403, 403, 200, LOGIN, LOGIN),
        POST=(400, 400, 400, 403, 403, 400, LOGIN, LOGIN),
    ),
    # The current team's pool in the per-slot format: the lead's, as others' grades are.
    "judgments:pool_export": row(query=lambda d: {"scale": "graded"},
                                 GET=(200, 200, 200, 403, 403, 200, LOGIN, LOGIN)),
    "judgments:scales": row(GET=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN)),
    "judgments:scale_create": row(
        GET=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
    ),
    "judgments:scale_edit": row(
        _scale,
        GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
    ),
    "judgments:scale_delete": row(_scale, POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN)),
    "judgments:transformer_edit": row(
        GET=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
        POST=(400, 400, 403, 403, 403, 400, LOGIN, LOGIN),
    ),
    "judgments:transformer_delete": row(_transformer,
                                        POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN)),
    "judgments:grader_tags": row(GET=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN)),
    "judgments:grader_tags_update": row(_grader_user,
                                        POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN)),
    # --- judges ---
    # Leads read the list (they choose judges for runs); the rest is the admins'
    # (judges.selectors.CONFIGURATION_ROLE). An empty POST is an unbound form: the page again.
    "judges:judge_list": row(GET=(200, 200, 200, 403, 403, 200, LOGIN, LOGIN)),
    # Behaviour sources: every member reads the team's list; a lead imports a file or opens
    # a collector (behaviour.api.WRITE_ROLE). An empty POST is a form with errors: 400.
    "behaviour:source_list": row(GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN)),
    "behaviour:source_import": row(POST=(400, 400, 400, 403, 403, 400, LOGIN, LOGIN)),
    "behaviour:collector_create": row(POST=(400, 400, 400, 403, 403, 400, LOGIN, LOGIN)),
    # A clicks grader is a judge: the same admins make one.
    "behaviour:click_grader_create": row(GET=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
                                         POST=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN)),
    # Its edit, as an LLM judge's (an empty POST is an unbound form: the page again).
    "behaviour:click_grader_edit": row(_click_grader,
                                       GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
                                       POST=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN)),
    "judges:judge_create": row(
        GET=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 200, LOGIN, LOGIN),
    ),
    "judges:judge_edit": row(
        _judge,
        GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
    ),
    "judges:judge_delete": row(
        _judge,
        GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
        POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN),
    ),
    "judges:judge_test": row(
        _judge,
        GET=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
        POST=(200, 200, 403, 403, 403, 404, LOGIN, LOGIN),
    ),
    "judges:calibration": row(_judge, query=_judge_evaluation_query,
                              GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    # An empty form changes nothing and goes back to the calibration page with the reason.
    "judges:counts": row(_judge, POST=(302, 302, 403, 403, 403, 404, LOGIN, LOGIN)),
    "judges:trust_policy": row(POST=(400, 400, 403, 403, 403, 400, LOGIN, LOGIN)),
    # --- judges: runs and call logs ---
    "judges:evaluation_runs": row(_evaluation, GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    "judges:run_start": row(
        _evaluation,
        GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
        POST=(400, 400, 400, 403, 403, 404, LOGIN, LOGIN),
    ),
    "judges:run_estimate": row(_evaluation, query=_estimate_query,
                               GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    "judges:run_detail": row(_judge_run, GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    # A refused action (resuming a running run) is a message on the run page, like a done one.
    "judges:run_pause": row(_judge_run, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "judges:run_resume": row(_judge_run, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "judges:run_cancel": row(_judge_run, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "judges:run_retry": row(_judge_run, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    "judges:judge_calls": row(_run_judge, GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    "judges:judge_calls_export": row(_run_judge, GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    "judges:call_detail": row(_judge_call, GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    # A run's learned grades (a header only for an LLM judge's run): its readers' download.
    "behaviour:run_learned_csv": row(_judge_run,
                                     GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    "behaviour:run_learned_jsonl": row(_judge_run,
                                       GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    # --- judges: triage (an empty form goes back to the page with the reason) ---
    "judges:triage": row(_evaluation, GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    "judges:adjudicate": row(_evaluation_snapshot,
                             POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    # --- metrics ---
    # A viewer's is the list of the team's evaluations, without the graders' counts.
    "metrics:team_dashboard": row(GET=(200, 200, 200, 200, 200, 200, LOGIN, LOGIN)),
    "metrics:evaluation_dashboard": row(_evaluation,
                                        GET=(200, 200, 200, 200, 200, 404, LOGIN, LOGIN)),
    "behaviour:evaluation_behaviour_fit": row(_evaluation,
                                              GET=(200, 200, 200, 200, 403, 404, LOGIN, LOGIN)),
    "metrics:evaluation_dashboard_live": row(_evaluation,
                                             GET=(200, 200, 200, 200, 200, 404, LOGIN, LOGIN)),
    "metrics:evaluation_dashboard_table": row(
        _evaluation,
        GET=(200, 200, 200, 200, 200, 404, LOGIN, LOGIN),
    ),
    "metrics:baseline": row(_evaluation, POST=(400, 400, 400, 403, 403, 404, LOGIN, LOGIN)),
    "metrics:model_history": row(_model, GET=(200, 200, 200, 200, 200, 404, LOGIN, LOGIN)),
    "metrics:compare": row(query=_compare_query, GET=(200, 200, 200, 200, 200, 404, LOGIN, LOGIN)),
    "metrics:compare_many": row(query=_compare_many_query,
                                GET=(200, 200, 200, 200, 200, 404, LOGIN, LOGIN)),
    "metrics:compare_many_csv": row(query=_compare_many_query,
                                    GET=(200, 200, 200, 200, 200, 404, LOGIN, LOGIN)),
    "metrics:compare_keyword": row(query=_compare_keyword_query,
                                   GET=(200, 200, 200, 200, 200, 404, LOGIN, LOGIN)),
    "metrics:leaderboard": row(GET=(200, 200, 200, 200, 403, 200, LOGIN, LOGIN)),
    # --- sharing ---
    # Leads make, list and revoke the team's links; an empty POST is an unbound form: the
    # page again.
    "sharing:share_create": row(query=_share_query,
                                GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN),
                                POST=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    "sharing:share_list": row(_team, GET=(200, 200, 200, 403, 403, 404, LOGIN, LOGIN)),
    "sharing:share_revoke": row(_share_link, POST=(302, 302, 302, 403, 403, 404, LOGIN, LOGIN)),
    # The link is the authority: whoever holds it reads the page, signed in or not.
    "sharing:shared": row(_share_token, GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    # --- searchtweak ---
    "api_schema": row(GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    "api_docs": row(GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    "api_redoc": row(GET=(200, 200, 200, 200, 200, 200, 200, 200)),
}

# Django's admin is for staff: no persona is, so every admin page sends each of them to the
# admin's login. A newly registered model adds patterns that fail until listed here.
ADMIN_MODELS = ("auth_group", "searchtweak_user", "searchtweak_team",
                "searchtweak_invitation", "searchtweak_apitoken",
                # django-axes' login throttling records.
                "axes_accessattempt", "axes_accessfailurelog", "axes_accesslog")
TO_ADMIN_LOGIN = (ADMIN_LOGIN,) * 8
for _name in ADMIN_MODELS:
    _app, _model_name = _name.split("_", 1)
    for _action in ("changelist", "add", "history", "delete", "change"):
        TABLE[f"admin:{_name}_{_action}"] = row(
            (lambda d: {}) if _action in ("changelist", "add") else (lambda d: {"object_id": "1"}),
            GET=TO_ADMIN_LOGIN)
    TABLE[f"admin/{_app}/{_model_name}/<path:object_id>/"] = row(
        path=f"/admin/{_app}/{_model_name}/1/", GET=TO_ADMIN_LOGIN)
TABLE.update({
    "admin:index": row(GET=TO_ADMIN_LOGIN),
    "admin:login": row(GET=(200, 200, 200, 200, 200, 200, 200, 200)),
    "admin:logout": row(POST=(302, 302, 302, 302, 302, 302, 302, 302)),
    "admin:password_change": row(GET=TO_ADMIN_LOGIN),
    "admin:password_change_done": row(GET=TO_ADMIN_LOGIN),
    "admin:autocomplete": row(GET=TO_ADMIN_LOGIN),
    "admin:jsi18n": row(GET=TO_ADMIN_LOGIN),
    "admin:view_on_site": row(lambda d: {"content_type_id": "1", "object_id": "1"},
                              GET=TO_ADMIN_LOGIN),
    "admin:auth_user_password_change": row(lambda d: {"id": "1"}, GET=TO_ADMIN_LOGIN),
    "admin:app_list": row(lambda d: {"app_label": "auth"}, GET=TO_ADMIN_LOGIN),
    "admin/(?P<url>.*)$": row(path="/admin/no/such/page/", GET=TO_ADMIN_LOGIN),
})


# --- the requests ------------------------------------------------------------------------


def _patterns(patterns=None, namespaces=(), prefix=""):
    """(key, route, pattern) of every URL pattern, namespaces joined as `reverse` wants."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            inner = (*namespaces, pattern.namespace) if pattern.namespace else namespaces
            yield from _patterns(pattern.url_patterns, inner, route)
        elif isinstance(pattern, URLPattern):
            # Unnamed patterns (a few of the admin's) are keyed by their route.
            key = ":".join((*namespaces, pattern.name)) if pattern.name else route
            yield key, route, pattern


def _outcome(response) -> int | str:
    if response.status_code == 302:
        location = response["Location"]
        if location.startswith("/admin/login/"):
            return ADMIN_LOGIN
        if location.startswith("/login/"):
            return LOGIN
    return response.status_code


def _url(dataset: Dataset, key: str) -> str:
    table_row = TABLE[key]
    url = table_row.path or reverse(key, kwargs=table_row.kwargs(dataset))
    query = table_row.query(dataset)
    return url + "?" + urlencode(query, doseq=True) if query else url


def _client(dataset: Dataset, persona: str) -> Client:
    """The persona's Client with the cookies it signed in with: a request that signed out,
    rotated the session or set a cookie leaves nothing for the next (its rows were rolled
    back with it)."""
    client = dataset.clients[persona]
    client.cookies = copy.deepcopy(dataset.cookies[persona])
    return client


def _request(client: Client, method: str, url: str, *, api: bool):
    if api:
        return client.generic(method, url, "{}" if method != "GET" else "",
                              content_type="application/json")
    return client.generic(method, url, "", content_type="application/x-www-form-urlencoded")


def _answers(dataset: Dataset, key: str, method: str) -> tuple:
    url = _url(dataset, key)
    api = url.startswith("/api/v1/")
    outcomes = []
    for persona in PERSONAS:
        client = _client(dataset, persona)
        with transaction.atomic():
            outcomes.append(_outcome(_request(client, method, url, api=api)))
            transaction.set_rollback(True)
    return tuple(outcomes)


def _cases() -> list[tuple[str, str]]:
    return [(key, method) for key, table_row in TABLE.items() for method in table_row.methods]


def test_every_url_pattern_has_a_row():
    missing = sorted(key for key, _, _ in _patterns() if key not in TABLE)
    assert not missing, f"URL patterns with no row in the access matrix: {missing}"
    stale = sorted(set(TABLE) - {key for key, _, _ in _patterns()})
    assert not stale, f"Rows for URL patterns that no longer exist: {stale}"


def test_every_method_an_api_view_handles_has_a_column():
    # A new PUT or DELETE on an API view must be decided too, not only a new URL.
    undecided = []
    for key, _, pattern in _patterns():
        view_class = getattr(pattern.callback, "view_class", None)
        if view_class is None or not issubclass(view_class, APIView) or key not in TABLE:
            continue
        handled = {method.upper() for method in ("get", "post", "put", "patch", "delete")
                   if hasattr(view_class, method)}
        undecided += [f"{method} {key}" for method in sorted(handled - set(TABLE[key].methods))]
    assert not undecided, f"API methods with no row in the access matrix: {undecided}"


@pytest.mark.parametrize(("key", "method"), _cases())
def test_each_persona_gets_the_answer_the_table_says(dataset, key, method):
    answers = _answers(dataset, key, method)
    assert answers == TABLE[key].methods[method], f"{method} {key}: {PERSONAS} = {answers}"


# --- every method of an HTML page is decided too --------------------------------------------

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
REFUSED = (401, 403, 404, LOGIN, ADMIN_LOGIN)


def _admitted(table_row: Row) -> str | None:
    """The first persona whom access lets through to one of the row's methods: for them a
    method the row does not list must be refused by the view itself."""
    return next((persona for index, persona in enumerate(PERSONAS)
                 if any(outcomes[index] not in REFUSED
                        for outcomes in table_row.methods.values())), None)


def _html_cases() -> list[tuple[str, str]]:
    # Django's admin is Django's (its login page takes a POST no row lists); API views are
    # test_every_method_an_api_view_handles_has_a_column's.
    return [(key, method) for key, table_row in TABLE.items()
            if not key.startswith("admin") and not key.split(":")[0].endswith("api")
            and _admitted(table_row) is not None
            for method in METHODS if method not in table_row.methods]


def test_the_html_method_check_covers_the_pages():
    # A sanity bound: the pages are there, not filtered away by a mistake above.
    keys = {key for key, _ in _html_cases()}
    assert {"metrics:evaluation_dashboard", "judgments:feedback", "login",
            "evaluations:keyword_detail"} <= keys
    assert not any(key.startswith("admin") or "api:" in key for key in keys)


@pytest.mark.parametrize(("key", "method"), _html_cases())
def test_an_html_page_refuses_every_method_it_has_no_column_for(dataset, key, method):
    # API views are checked by test_every_method_an_api_view_handles_has_a_column.
    persona = _admitted(TABLE[key])
    client = _client(dataset, persona)
    with transaction.atomic():
        answer = _outcome(_request(client, method, _url(dataset, key), api=False))
        transaction.set_rollback(True)
    assert answer == 405, f"{method} {key} as {persona}: {answer}, not 405 (add a column?)"


# --- a grader sees no other grader's grade ----------------------------------------------------

# Pages that name the team's people beside counts, never beside a grade: the second
# grader's name may appear there (their note and the judge's reason still may not).
NAMES_PEOPLE = {
    "api:team": "the team's members",
    "team_detail": "the team's members",
    "metrics:team_dashboard": "each grader's count of grades today and this week",
    "metrics:leaderboard": "each grader's count of grades and agreement rate",
}


def _graded_dataset(dataset: Dataset) -> Dataset:
    """The dataset with every evaluation, keyword, result and slot row pointed at the
    independently graded evaluations (the grader's open slot is the slot)."""
    graded, again = dataset.graded, dataset.graded_again
    return replace(dataset, evaluation=graded.evaluation, second_evaluation=again.evaluation,
                   keyword=graded.open_slot.keyword, snapshot_id=graded.open_slot.snapshot_id,
                   slot=graded.open_slot, share_token=dataset.graded_share_token)


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


@pytest.mark.parametrize(("key", "method"), _cases())
def test_a_grader_sees_no_other_graders_grade(dataset, key, method):
    graded = _graded_dataset(dataset)
    url = _url(graded, key)
    with transaction.atomic():
        response = _request(_client(dataset, "grader"), method, url,
                            api=url.startswith("/api/v1/"))
        body = _body(response)
        transaction.set_rollback(True)
    markers = [SECOND_NOTE, JUDGE_REASON, f'"{dataset.graded.judge_username}"']
    if key not in NAMES_PEOPLE:
        markers.append(SECOND_GRADER)
    shown = [marker for marker in markers if marker in body]
    assert not shown, f"{method} {url} shows the grader {shown} ({response.status_code})"


def test_each_page_that_may_name_people_does(dataset):
    # An exception that no page needs any more is taken out, not left to hide a leak.
    graded = _graded_dataset(dataset)
    for key in NAMES_PEOPLE:
        url = _url(graded, key)
        assert SECOND_GRADER in _body(_client(dataset, "grader").get(url)), key


def test_the_grade_check_reaches_the_pages_that_show_grades(dataset):
    # Against the graded evaluation the grader gets these pages (their own grades on them),
    # and a lead sees the markers there: the check above is not vacuous.
    graded = _graded_dataset(dataset)
    for key in ("metrics:evaluation_dashboard", "metrics:evaluation_dashboard_table",
                "metrics:compare_keyword", "evaluations:keyword_detail",
                "judgments_api:snapshots"):
        url = _url(graded, key)
        assert _client(dataset, "grader").get(url).status_code == 200, key
        assert SECOND_GRADER in _body(_client(dataset, "lead").get(url)), key


# --- a viewer and a share link's visitor read results, not people ---------------------------

# The endpoint's address (tests/evaluations/factories.py): endpoint configuration.
ENDPOINT_MARKER = "127.0.0.1:9/search"
READERS = ("viewer", "shared")


def _reader_markers(dataset: Dataset) -> list[str]:
    # Every person's name and note (the grader's own included: to a reader it is another's),
    # the judge's reason and name, and the endpoint's address.
    return [SECOND_GRADER, SECOND_NOTE, VIEWER_NOTE, JUDGE_REASON,
            f'"{dataset.graded.judge_username}"', ENDPOINT_MARKER]


@pytest.mark.parametrize("persona", READERS)
@pytest.mark.parametrize(("key", "method"), _cases())
def test_a_reader_sees_no_person_grade_or_endpoint(dataset, key, method, persona):
    graded = _graded_dataset(dataset)
    url = _url(graded, key)
    with transaction.atomic():
        response = _request(_client(dataset, persona), method, url,
                            api=url.startswith("/api/v1/"))
        body = _body(response)
        transaction.set_rollback(True)
    shown = [marker for marker in _reader_markers(dataset) if marker in body]
    assert not shown, f"{method} {url} shows the {persona} {shown} ({response.status_code})"


def test_the_reader_check_reaches_the_pages_readers_read(dataset):
    # The pages a reader gets show the markers to a lead (the check above is not vacuous),
    # and the reader gets them (200) without.
    graded = _graded_dataset(dataset)
    pages = {"metrics:evaluation_dashboard": "viewer", "metrics:compare_keyword": "viewer",
             "metrics:evaluation_dashboard_table": "viewer", "sharing:shared": "shared"}
    for key, persona in pages.items():
        url = _url(graded, key)
        lead_url = (reverse("metrics:evaluation_dashboard", args=[graded.evaluation.pk])
                    if key == "sharing:shared" else url)
        assert SECOND_GRADER in _body(_client(dataset, "lead").get(lead_url)), key
        assert _client(dataset, persona).get(url).status_code == 200, key


def test_a_shared_comparison_names_nobody(dataset):
    body = _body(_client(dataset, "shared").get(
        reverse("sharing:shared", args=[dataset.graded_share_compare_token])))
    assert "against A:" in body
    assert not [marker for marker in _reader_markers(dataset) if marker in body]


def test_a_viewers_api_lists_hold_nothing_of_the_team(dataset):
    # The lists answer 200 (the viewer's own teams where they grade: none) and name no row.
    for key in ("evaluations_api:endpoints", "evaluations_api:models",
                "evaluations_api:evaluations", "evaluations_api:query_sets",
                "schedules_api:schedules", "behaviour_api:sources"):
        answer = _client(dataset, "viewer").get(reverse(key)).json()
        assert answer["count"] == 0, key
