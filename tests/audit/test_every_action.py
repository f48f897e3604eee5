"""Every audited action, done through its page or API as a person (or their token) does
it, leaves exactly one event: the action, the actor, the team, the object, the client's
address and the changed fields, with no secret in it."""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from audit.models import Action, AuditEvent
from behaviour import learning
from behaviour.models import BehaviourSource
from behaviour.services import behaviour_source_create_collector
from evaluations.endpoints.services import endpoint_update
from evaluations.models import Endpoint, Evaluation, KeywordSet, SearchModel, Snapshot
from evaluations.query_sets.services import query_set_create
from evaluations.services.lifecycle import evaluation_archive, evaluation_finish
from judges import services as judge_services
from judges.models import Judge, JudgeRun, JudgeTrustPolicy
from judges.runs import run_pause, run_start
from judgments.models import Scale, Transformer
from judgments.scale_writes import scale_create, transformer_save
from notifications.models import Webhook
from notifications.services import webhook_create
from schedules.models import Schedule
from searchtweak.models import ApiToken, Invitation, Membership, Role, Team, User
from searchtweak.services import api_token_create, invitation_create
from sharing.models import ShareLink
from sharing.services import share_link_create
from tests.evaluations.factories import EndpointFactory, EvaluationFactory, SearchModelFactory
from tests.judges.calibration_data import bar, half_kappa_example
from tests.judgments.builders import evaluation_with_slots
from tests.schedules.builders import model_and_set, schedule_of

pytestmark = pytest.mark.django_db

ADDRESS = "198.51.100.23"
HEADER_SECRET = "abcdef0123456789"
JUDGE_KEY = "sk-api-secret-31415926535"
STARS = {"code": "stars", "name": "Stars", "lo": 1, "hi": 3, "labels": {
    "1": {"label": "Bad", "color": "#d92d20"}, "2": {"label": "Okay", "color": "#f79009"},
    "3": {"label": "Great", "color": "#079455"}}}


@dataclass
class Done:
    """What one action's request answered, and the event it must have left."""
    status: int
    action: str
    actor: str
    object_type: str
    object_id: Any
    changes: dict[str, list] = field(default_factory=dict)  # exact [before, after] pairs
    changed: set[str] = field(default_factory=set)  # further fields that must be listed
    secrets: tuple[str, ...] = ()
    answered: int = 0
    team: bool | int = True  # the personas' team, none, or this team's id


# The newest event's id each time a client is made: what the action's set-up wrote (a
# factory, a service) comes before, and only what follows the last mark is the action's.
MARKS: list[int] = []


def mark() -> None:
    MARKS.append(AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0)


def api(user) -> APIClient:
    mark()
    client = APIClient(REMOTE_ADDR=ADDRESS)
    client.force_authenticate(user)
    return client


def page(user) -> Client:
    client = Client(REMOTE_ADDR=ADDRESS)
    client.force_login(user)  # a sign-in, and an event of its own
    mark()
    return client


def endpoint_of(team) -> Endpoint:
    return EndpointFactory(team=team, name="Products")


# --- the actions -------------------------------------------------------------------------


def endpoint_created(p) -> Done:
    answer = api(p.admin).post("/api/v1/endpoints/", {
        "name": "Products", "url": "https://search.test/products",
        "headers": {"Authorization": f"ApiKey {HEADER_SECRET}", "Accept-Language": "en"},
        "mapper": {"documents": "hits.hits", "id": "_id", "name": "_source.title",
                   "image": None, "fields": {}}}, format="json")
    return Done(answer.status_code, Action.ENDPOINT_CREATED, "admin", "endpoint",
                Endpoint.objects.get().pk, {"name": [None, "Products"],
                                            "secret_headers_encrypted": [None, "********"]},
                {"url", "headers", "mapper"}, secrets=(HEADER_SECRET,), answered=201)


def endpoint_changed(p) -> Done:
    endpoint = endpoint_of(p.team)
    answer = api(p.admin).patch(f"/api/v1/endpoints/{endpoint.pk}/", {"name": "Catalogue"},
                                format="json")
    return Done(answer.status_code, Action.ENDPOINT_CHANGED, "admin", "endpoint", endpoint.pk,
                {"name": ["Products", "Catalogue"]}, answered=200)


def endpoint_deleted(p) -> Done:
    endpoint = endpoint_of(p.team)
    answer = api(p.admin).delete(f"/api/v1/endpoints/{endpoint.pk}/")
    return Done(answer.status_code, Action.ENDPOINT_DELETED, "admin", "endpoint", endpoint.pk,
                {"name": ["Products", None]}, answered=204)


def search_model_created(p) -> Done:
    endpoint = endpoint_of(p.team)
    answer = api(p.admin).post("/api/v1/models/", {
        "name": "BM25", "endpoint": endpoint.pk, "params": {"q": "#query#"}}, format="json")
    return Done(answer.status_code, Action.SEARCH_MODEL_CREATED, "admin", "search_model",
                SearchModel.objects.get().pk,
                {"name": [None, "BM25"], "endpoint": [None, endpoint.pk],
                 "params": [None, {"q": "#query#"}]}, answered=201)


def search_model_changed(p) -> Done:
    model = SearchModelFactory(endpoint__team=p.team, name="BM25")
    answer = api(p.admin).patch(f"/api/v1/models/{model.pk}/", {"name": "BM25F"},
                                format="json")
    return Done(answer.status_code, Action.SEARCH_MODEL_CHANGED, "admin", "search_model",
                model.pk, {"name": ["BM25", "BM25F"]}, answered=200)


def search_model_deleted(p) -> Done:
    model = SearchModelFactory(endpoint__team=p.team, name="BM25")
    answer = api(p.admin).delete(f"/api/v1/models/{model.pk}/")
    return Done(answer.status_code, Action.SEARCH_MODEL_DELETED, "admin", "search_model",
                model.pk, {"name": ["BM25", None]}, answered=204)


def offline_run_imported(p) -> Done:
    created = api(p.admin).post("/api/v1/models/offline/", {"name": "Run"}, format="json")
    model_id = created.json()["id"]
    answer = api(p.admin).post(f"/api/v1/models/{model_id}/run/", {
        "format": "jsonl", "file": SimpleUploadedFile(
            "bm25.jsonl",
            b'{"keyword": "Shoes", "results": [{"doc_id": "a"}, {"doc_id": "b"}]}\n')},
        format="multipart")
    return Done(answer.status_code, Action.OFFLINE_RUN_IMPORTED, "admin", "search_model",
                model_id, {"format": [None, "jsonl"], "filename": [None, "bm25.jsonl"],
                           "keyword_count": [None, 1], "result_count": [None, 2]},
                {"run"}, answered=201)


def evaluation_created(p) -> Done:
    model = SearchModelFactory(endpoint__team=p.team)
    answer = api(p.lead).post("/api/v1/evaluations/", {
        "name": "Spring", "model": model.pk, "scale": "graded", "strategy": 1,
        "keywords": ["shoes", "hats"], "metrics": [{"code": "ndcg", "k": 10}]}, format="json")
    return Done(answer.status_code, Action.EVALUATION_CREATED, "lead", "evaluation",
                Evaluation.objects.get().pk,
                {"name": [None, "Spring"], "model": [None, model.pk],
                 "keyword_count": [None, 2]}, answered=201)


def evaluation_changed(p) -> Done:
    evaluation = EvaluationFactory(model__endpoint__team=p.team, name="Spring")
    answer = api(p.lead).patch(f"/api/v1/evaluations/{evaluation.pk}/",
                               {"name": "Summer", "tags": ["q3"]}, format="json")
    return Done(answer.status_code, Action.EVALUATION_CHANGED, "lead", "evaluation",
                evaluation.pk, {"name": ["Spring", "Summer"], "tags": [[], ["q3"]]},
                answered=200)


def evaluation_cloned(p) -> Done:
    evaluation = EvaluationFactory(model__endpoint__team=p.team, name="Spring")
    answer = api(p.lead).post(f"/api/v1/evaluations/{evaluation.pk}/clone/", {},
                              format="json")
    clone = Evaluation.objects.exclude(pk=evaluation.pk).get()
    return Done(answer.status_code, Action.EVALUATION_CREATED, "lead", "evaluation", clone.pk,
                {"name": [None, "Spring (copy)"], "cloned_from": [None, evaluation.pk]},
                answered=201)


def evaluation_finished(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team)
    answer = api(p.lead).post(f"/api/v1/evaluations/{evaluation.pk}/finish/")
    return Done(answer.status_code, Action.EVALUATION_FINISHED, "lead", "evaluation",
                evaluation.pk, {"status": ["active", "finished"]}, answered=200)


def evaluation_paused(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team)
    answer = api(p.lead).post(f"/api/v1/evaluations/{evaluation.pk}/pause/")
    return Done(answer.status_code, Action.EVALUATION_PAUSED, "lead", "evaluation",
                evaluation.pk, {"status": ["active", "pending"]}, answered=200)


def evaluation_archived(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team)
    answer = api(p.lead).post(f"/api/v1/evaluations/{evaluation.pk}/archive/")
    return Done(answer.status_code, Action.EVALUATION_ARCHIVED, "lead", "evaluation",
                evaluation.pk, {"by": [None, "api"]}, answered=200)


def evaluation_restored(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team)
    evaluation_archive(evaluation=evaluation)
    answer = api(p.lead).post(f"/api/v1/evaluations/{evaluation.pk}/restore/")
    return Done(answer.status_code, Action.EVALUATION_RESTORED, "lead", "evaluation",
                evaluation.pk, {"by": [None, "api"]}, answered=200)


def evaluation_deleted(p) -> Done:
    evaluation = EvaluationFactory(model__endpoint__team=p.team, name="Spring")
    answer = api(p.lead).delete(f"/api/v1/evaluations/{evaluation.pk}/")
    return Done(answer.status_code, Action.EVALUATION_DELETED, "lead", "evaluation",
                evaluation.pk, {"name": ["Spring", None]}, answered=204)


def gold_item_made(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team, keywords=2, positions=2)
    snapshot = Snapshot.objects.get(keyword__evaluation=evaluation, keyword__position=1,
                                    position=2)
    answer = api(p.lead).post(f"/api/v1/evaluations/{evaluation.pk}/gold/",
                              {"snapshot": snapshot.pk, "grade": 3}, format="json")
    return Done(answer.status_code, Action.GOLD_ITEMS_CHANGED, "lead", "evaluation",
                evaluation.pk, {"snapshot": [None, snapshot.pk], "gold_grade": [None, 3]},
                answered=201)


def gold_items_imported(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team, keywords=2, positions=2)
    answer = api(p.lead).post(f"/api/v1/evaluations/{evaluation.pk}/gold/import/", {
        "file": SimpleUploadedFile("gold.csv", b"keyword,doc_id,grade\nquery 2,query 2-d1,1\n")},
        format="multipart")
    return Done(answer.status_code, Action.GOLD_ITEMS_IMPORTED, "lead", "evaluation",
                evaluation.pk, {"imported": [None, 1]}, answered=201)


def baseline_set(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team)
    evaluation_finish(evaluation=evaluation)
    answer = page(p.lead).post(f"/dashboard/evaluations/{evaluation.pk}/baseline/",
                               {"action": "set"})
    return Done(answer.status_code, Action.TEAM_BASELINE_CHANGED, "lead", "team", p.team.pk,
                {"baseline": [None, evaluation.pk]}, answered=302)


def team_created(p) -> Done:
    answer = api(p.grader).post("/api/v1/teams/", {"name": "Skunkworks"}, format="json")
    team = Team.objects.get(name="Skunkworks")
    return Done(answer.status_code, Action.TEAM_CREATED, "grader", "team", team.pk,
                {"name": [None, "Skunkworks"]}, answered=201, team=team.pk)


def query_set_created(p) -> Done:
    answer = api(p.lead).post("/api/v1/query-sets/", {"name": "Nightly",
                                                      "keywords": ["shoes", "hats", "bags"]},
                              format="json")
    return Done(answer.status_code, Action.QUERY_SET_CREATED, "lead", "query_set",
                KeywordSet.objects.get().pk, {"name": [None, "Nightly"],
                                              "keyword_count": [None, 3], "version": [None, 1]},
                answered=201)


def query_set_imported(p) -> Done:
    answer = api(p.lead).post("/api/v1/query-sets/", {
        "name": "From a file", "keywords_file": SimpleUploadedFile(
            "queries.txt", b"shoes\nhats\n")}, format="multipart")
    return Done(answer.status_code, Action.QUERY_SET_CREATED, "lead", "query_set",
                KeywordSet.objects.get().pk, {"name": [None, "From a file"],
                                              "keyword_count": [None, 2]}, answered=201)


def query_set_changed(p) -> Done:
    query_set = query_set_create(team=p.team, created_by=p.lead, name="Nightly",
                                 keywords=["shoes"])
    answer = api(p.lead).patch(f"/api/v1/query-sets/{query_set.pk}/", {"name": "Weekly"},
                               format="json")
    return Done(answer.status_code, Action.QUERY_SET_CHANGED, "lead", "query_set",
                query_set.pk, {"name": ["Nightly", "Weekly"]}, answered=200)


def query_set_edited(p) -> Done:
    """The edit page saves the name and a new keyword version in one step: one event."""
    query_set = query_set_create(team=p.team, created_by=p.lead, name="Shoes",
                                 keywords=["boots", "sandals"])
    answer = page(p.lead).post(f"/query-sets/{query_set.pk}/edit/", {
        "name": "Footwear", "keywords": "boots\nclogs"})
    return Done(answer.status_code, Action.QUERY_SET_CHANGED, "lead", "query_set",
                query_set.pk, {"name": ["Shoes", "Footwear"], "version": [1, 2]},
                answered=302)


def query_set_archived(p) -> Done:
    query_set = query_set_create(team=p.team, created_by=p.lead, name="Nightly",
                                 keywords=["shoes"])
    answer = api(p.lead).post(f"/api/v1/query-sets/{query_set.pk}/archive/")
    return Done(answer.status_code, Action.QUERY_SET_CHANGED, "lead", "query_set",
                query_set.pk, {"archived": [False, True]}, answered=200)


def scale_created(p) -> Done:
    answer = api(p.admin).post("/api/v1/scales/", STARS, format="json")
    return Done(answer.status_code, Action.SCALE_CREATED, "admin", "scale",
                Scale.objects.get(code="stars").pk,
                {"code": [None, "stars"], "lo": [None, 1], "hi": [None, 3]}, {"labels", "name"},
                answered=201)


def scale_changed(p) -> Done:
    scale = scale_create(team=p.team, **STARS)
    answer = api(p.admin).patch(f"/api/v1/scales/{scale.pk}/", {"name": "Five stars"},
                                format="json")
    return Done(answer.status_code, Action.SCALE_CHANGED, "admin", "scale", scale.pk,
                {"name": ["Stars", "Five stars"]}, answered=200)


def scale_deleted(p) -> Done:
    scale = scale_create(team=p.team, **STARS)
    answer = api(p.admin).delete(f"/api/v1/scales/{scale.pk}/")
    return Done(answer.status_code, Action.SCALE_DELETED, "admin", "scale", scale.pk,
                {"code": ["stars", None]}, answered=204)


def transformer_saved(p) -> Done:
    answer = api(p.admin).post("/api/v1/transformers/", {
        "source": "graded", "target": "binary", "mapping": {"0": 0, "1": 0, "2": 1, "3": 1}},
        format="json")
    return Done(answer.status_code, Action.TRANSFORMER_SAVED, "admin", "transformer",
                Transformer.objects.get().pk,
                {"mapping": [None, {"0": 0, "1": 0, "2": 1, "3": 1}]}, answered=201)


def transformer_deleted(p) -> Done:
    transformer = transformer_save(team=p.team, source="graded", target="binary",
                                   mapping={"0": 0, "1": 0, "2": 1, "3": 1})
    answer = api(p.admin).delete(f"/api/v1/transformers/{transformer.pk}/")
    return Done(answer.status_code, Action.TRANSFORMER_DELETED, "admin", "transformer",
                transformer.pk, {"source": ["graded", None]}, answered=204)


def judge_of(team) -> Judge:
    return judge_services.judge_create(team=team, by=None, name="GPT grader",
                                       provider="openai", model="gpt-4o-mini",
                                       api_key=JUDGE_KEY)


def judge_created(p) -> Done:
    answer = api(p.admin).post("/api/v1/judges/", {
        "name": "GPT grader", "provider": "openai", "model": "gpt-4o-mini",
        "api_key": JUDGE_KEY}, format="json")
    return Done(answer.status_code, Action.JUDGE_CREATED, "admin", "judge",
                Judge.objects.get().pk, {"name": [None, "GPT grader"],
                                         "api_key_encrypted": [None, "********"]},
                secrets=(JUDGE_KEY,), answered=201)


def judge_changed(p) -> Done:
    judge = judge_of(p.team)
    answer = api(p.admin).patch(f"/api/v1/judges/{judge.pk}/", {
        "batch_size": 9, "api_key": "sk-another-secret-2718281828"}, format="json")
    return Done(answer.status_code, Action.JUDGE_CHANGED, "admin", "judge", judge.pk,
                {"batch_size": [5, 9], "api_key_encrypted": ["********", "********"]},
                secrets=(JUDGE_KEY, "sk-another-secret-2718281828"), answered=200)


def judge_deleted(p) -> Done:
    judge = judge_of(p.team)
    answer = api(p.admin).delete(f"/api/v1/judges/{judge.pk}/")
    return Done(answer.status_code, Action.JUDGE_DELETED, "admin", "judge", judge.pk,
                {"name": ["GPT grader", None]}, secrets=(JUDGE_KEY,), answered=204)


def judge_let_count(p) -> Done:
    bar(p.team, min_pairs=4, min_kappa=0.9)
    judge, _ = half_kappa_example(p.team, p.grader)
    answer = api(p.admin).post(f"/api/v1/judges/{judge.pk}/counts/", {
        "counts": True, "override_reason": "Good enough for the long tail"}, format="json")
    return Done(answer.status_code, Action.JUDGE_COUNTS_CHANGED, "admin", "judge", judge.pk,
                {"counts": [False, True],
                 "counts_override_reason": [None, "Good enough for the long tail"]},
                answered=200)


def judge_run_started(p) -> Done:
    evaluation, judge = evaluation_with_slots(team=p.team), judge_of(p.team)
    answer = api(p.lead).post(f"/api/v1/evaluations/{evaluation.pk}/judge-runs/",
                              {"judge": judge.pk, "mode": "shadow"}, format="json")
    run = JudgeRun.objects.get()
    return Done(answer.status_code, Action.JUDGE_RUN_STARTED, "lead", "judge_run", run.pk,
                {"judge": [None, judge.pk], "evaluation": [None, evaluation.pk],
                 "mode": [None, "shadow"], "pair_count": [None, run.pair_count]},
                answered=201)


def judge_run_cancelled(p) -> Done:
    evaluation, judge = evaluation_with_slots(team=p.team), judge_of(p.team)
    run = run_start(judge=judge, evaluation=evaluation, mode="shadow", started_by=p.lead)
    answer = api(p.lead).post(f"/api/v1/judge-runs/{run.pk}/cancel/")
    return Done(answer.status_code, Action.JUDGE_RUN_CANCELLED, "lead", "judge_run", run.pk,
                {"status": ["running", "cancelled"]}, answered=200)


def judge_run_paused(p) -> Done:
    evaluation, judge = evaluation_with_slots(team=p.team), judge_of(p.team)
    run = run_start(judge=judge, evaluation=evaluation, mode="shadow", started_by=p.lead)
    answer = api(p.lead).post(f"/api/v1/judge-runs/{run.pk}/pause/")
    return Done(answer.status_code, Action.JUDGE_RUN_CHANGED, "lead", "judge_run", run.pk,
                {"status": ["running", "paused"]}, answered=200)


def judge_run_resumed(p) -> Done:
    evaluation, judge = evaluation_with_slots(team=p.team), judge_of(p.team)
    run = run_pause(run=run_start(judge=judge, evaluation=evaluation, mode="shadow",
                                  started_by=p.lead))
    answer = api(p.lead).post(f"/api/v1/judge-runs/{run.pk}/resume/", {}, format="json")
    return Done(answer.status_code, Action.JUDGE_RUN_CHANGED, "lead", "judge_run", run.pk,
                {"status": ["paused", "running"]}, answered=200)


def trust_policy_changed(p) -> Done:
    bar(p.team, min_pairs=30, min_kappa=0.4)
    answer = api(p.admin).put("/api/v1/judges/trust-policy/",
                              {"min_pairs": 5, "min_kappa": 0.5}, format="json")
    return Done(answer.status_code, Action.JUDGE_TRUST_POLICY_CHANGED, "admin",
                "judge_trust_policy", JudgeTrustPolicy.objects.get(team=p.team).pk,
                {"min_pairs": [30, 5], "min_kappa": [0.4, 0.5]}, answered=200)


def schedule_created(p) -> Done:
    model, query_set = model_and_set(p.team, p.lead)
    answer = api(p.lead).post("/api/v1/schedules/", {
        "name": "Nightly", "model": model.pk, "query_set": query_set.pk, "scale": "graded",
        "strategy": 1, "metrics": [{"code": "ndcg@10"}], "interval_minutes": 60,
        "baseline": "previous"}, format="json")
    return Done(answer.status_code, Action.SCHEDULE_CREATED, "lead", "schedule",
                Schedule.objects.get().pk, {"name": [None, "Nightly"],
                                            "interval_minutes": [None, 60]},
                {"model", "query_set", "metrics"}, answered=201)


def schedule_changed(p) -> Done:
    schedule = schedule_of(p.team, p.lead)
    answer = api(p.lead).patch(f"/api/v1/schedules/{schedule.pk}/", {"keep_runs": 3},
                               format="json")
    return Done(answer.status_code, Action.SCHEDULE_CHANGED, "lead", "schedule", schedule.pk,
                {"keep_runs": [schedule.keep_runs, 3]}, answered=200)


def schedule_paused(p) -> Done:
    schedule = schedule_of(p.team, p.lead)
    answer = api(p.lead).post(f"/api/v1/schedules/{schedule.pk}/pause/",
                              {"reason": "Index rebuild"}, format="json")
    return Done(answer.status_code, Action.SCHEDULE_CHANGED, "lead", "schedule", schedule.pk,
                {"paused": [False, True], "paused_reason": [None, "Index rebuild"]},
                answered=200)


def schedule_deleted(p) -> Done:
    schedule = schedule_of(p.team, p.lead)
    answer = api(p.lead).delete(f"/api/v1/schedules/{schedule.pk}/")
    return Done(answer.status_code, Action.SCHEDULE_DELETED, "lead", "schedule", schedule.pk,
                {"name": [schedule.name, None]}, answered=204)


def webhook_created(p) -> Done:
    answer = api(p.admin).post(f"/api/v1/teams/{p.team.pk}/webhooks/", {
        "url": "http://127.0.0.1:9/hook", "events": ["evaluation_finished"]}, format="json")
    return Done(answer.status_code, Action.WEBHOOK_CREATED, "admin", "webhook",
                Webhook.objects.get().pk, {"url": [None, "http://127.0.0.1:9/hook"],
                                           "secret_encrypted": [None, "********"]},
                secrets=(answer.json().get("secret", "-"),), answered=201)


def webhook_changed(p) -> Done:
    webhook, secret = webhook_create(team=p.team, created_by=p.admin,
                                     url="http://127.0.0.1:9/hook", events=["run_regressed"])
    answer = api(p.admin).patch(f"/api/v1/webhooks/{webhook.pk}/", {"active": False},
                                format="json")
    return Done(answer.status_code, Action.WEBHOOK_CHANGED, "admin", "webhook", webhook.pk,
                {"active": [True, False]}, secrets=(secret,), answered=200)


def webhook_deleted(p) -> Done:
    webhook, secret = webhook_create(team=p.team, created_by=p.admin,
                                     url="http://127.0.0.1:9/hook", events=["run_regressed"])
    answer = api(p.admin).delete(f"/api/v1/webhooks/{webhook.pk}/")
    return Done(answer.status_code, Action.WEBHOOK_DELETED, "admin", "webhook", webhook.pk,
                {"url": ["http://127.0.0.1:9/hook", None],
                 "secret_encrypted": ["********", None]}, secrets=(secret,), answered=204)


def role_changed(p) -> Done:
    membership = Membership.objects.get(team=p.team, user=p.grader)
    answer = page(p.owner).post(f"/memberships/{membership.pk}/role/", {"role": "lead"})
    return Done(answer.status_code, Action.ROLE_CHANGED, "owner", "membership",
                membership.pk, {"role": ["grader", "lead"]}, answered=302)


def member_removed(p) -> Done:
    membership = Membership.objects.get(team=p.team, user=p.grader)
    answer = page(p.owner).post(f"/memberships/{membership.pk}/remove/")
    return Done(answer.status_code, Action.MEMBER_REMOVED, "owner", "membership",
                membership.pk, {"role": ["grader", None], "user": [p.grader.pk, None]},
                answered=302)


def invitation_made(p) -> Done:
    User.objects.create_user("newbie", password="pw-unused-1")
    answer = api(p.admin).post(f"/api/v1/teams/{p.team.pk}/invitations/",
                               {"invitee": "newbie", "role": "lead"}, format="json")
    invitation = Invitation.objects.get()
    return Done(answer.status_code, Action.INVITATION_CREATED, "admin", "invitation",
                invitation.pk, {"invitee": [None, "newbie"], "role": [None, "lead"]},
                secrets=(invitation.token,), answered=201)


def member_added(p) -> Done:
    newbie = User.objects.create_user("newbie", password="pw-unused-1")
    invitation = invitation_create(team=p.team, invited_by=p.admin, invitee="newbie",
                                   role=Role.LEAD)
    answer = page(newbie).post(f"/invitations/{invitation.token}/")
    return Done(answer.status_code, Action.MEMBER_ADDED, "newbie", "membership",
                Membership.objects.get(team=p.team, user=newbie).pk,
                {"role": [None, "lead"], "user": [None, newbie.pk]}, answered=302)


def token_made(p) -> Done:
    answer = page(p.grader).post("/settings/tokens/", {"name": "laptop"})
    token = ApiToken.objects.get()
    return Done(answer.status_code, Action.API_TOKEN_CREATED, "grader", "api_token", token.pk,
                {"name": [None, "laptop"], "key_prefix": [None, token.key_prefix]},
                answered=302, team=False)


def token_revoked(p) -> Done:
    token, _ = api_token_create(user=p.grader, name="laptop")
    answer = page(p.grader).post(f"/settings/tokens/{token.pk}/revoke/")
    return Done(answer.status_code, Action.API_TOKEN_REVOKED, "grader", "api_token", token.pk,
                {"name": ["laptop", None]}, {"revoked_at"}, answered=302, team=False)


def judgments_imported(p) -> Done:
    answer = page(p.lead).post("/pool/import/", {
        "scale": "graded", "format": "csv", "import": "1",
        "file": SimpleUploadedFile("j.csv", b"laptop,d1,3\nlaptop,d2,0\n")})
    return Done(answer.status_code, Action.JUDGMENTS_IMPORTED, "lead", "judgment_pool",
                "graded", {"imported": [None, 2], "replaced": [None, 0]}, {"source"},
                answered=302)


def judgments_exported(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team)
    answer = api(p.lead).get(f"/api/v1/evaluations/{evaluation.pk}/judgments/",
                             {"format": "csv"})
    return Done(answer.status_code, Action.EXPORT_DOWNLOADED, "lead", "evaluation",
                evaluation.pk, {"format": [None, "csv"]}, answered=200)


def pool_exported(p) -> Done:
    answer = page(p.lead).get("/pool/export/", {"scale": "graded"})
    return Done(answer.status_code, Action.EXPORT_DOWNLOADED, "lead", "judgment_pool",
                "graded", {"format": [None, "csv"]}, answered=200)


def judge_calls_exported(p) -> Done:
    judge = judge_of(p.team)
    answer = api(p.lead).get(f"/api/v1/judges/{judge.pk}/calls.jsonl")
    return Done(answer.status_code, Action.EXPORT_DOWNLOADED, "lead", "judge_calls",
                judge.pk, {"format": [None, "jsonl"]}, answered=200)


def audit_trail_exported(p) -> Done:
    answer = page(p.owner).get(f"/teams/{p.team.pk}/audit/", {"format": "csv"})
    return Done(answer.status_code, Action.EXPORT_DOWNLOADED, "owner", "audit_trail",
                p.team.pk, {"format": [None, "csv"]}, answered=200)


def behaviour_imported(p, tmp_path: Path) -> Done:
    counts = tmp_path / "counts.csv"
    counts.write_text("keyword,doc_id,position,impressions,clicks,dwell_seconds\n"
                      "red shoes,A,1,100,30,20\n")
    call_command("import_behaviour", "--team", str(p.team.pk), "--name", "Spring clicks",
                 "--csv", str(counts))

    return Done(0, Action.BEHAVIOUR_SOURCE_IMPORTED, "", "behaviour_source",
                BehaviourSource.objects.get().pk,
                {"name": [None, "Spring clicks"], "kind": [None, "csv"]})


def collector_opened(p) -> Done:
    answer = api(p.lead).post("/api/v1/behaviour-sources/", {"name": "Shop front"},
                              format="json")
    return Done(answer.status_code, Action.BEHAVIOUR_SOURCE_CREATED, "lead", "behaviour_source",
                BehaviourSource.objects.get().pk,
                {"name": [None, "Shop front"], "kind": [None, "collector"]}, answered=201)


def clicks_grader_made(p) -> Done:
    source = behaviour_source_create_collector(team=p.team, user=p.lead, name="Shop front")
    answer = api(p.admin).post("/api/v1/click-graders/", {
        "name": "Learned PBM", "source": source.pk, "click_model": "pbm",
        "min_impressions": 20}, format="json")
    return Done(answer.status_code, Action.JUDGE_CREATED, "admin", "judge",
                Judge.objects.get().pk, {"name": [None, "Learned PBM"],
                                         "provider": [None, "clicks"]}, answered=201)


def clicks_grader_of(p):
    source = behaviour_source_create_collector(team=p.team, user=p.lead, name="Shop front")
    return learning.click_grader_create(team=p.team, by=None, name="Learned PBM",
                                        source=source, click_model="pbm")


def clicks_grader_changed(p) -> Done:
    grader = clicks_grader_of(p)
    answer = api(p.admin).patch(f"/api/v1/click-graders/{grader.judge_id}/", {
        "click_model": "coec", "min_impressions": 20}, format="json")
    return Done(answer.status_code, Action.JUDGE_CHANGED, "admin", "judge", grader.judge_id,
                {"click_model": ["pbm", "coec"], "model": ["pbm", "coec"],
                 "min_impressions": [10, 20]}, answered=200)


def clicks_grader_edited(p) -> Done:
    grader = clicks_grader_of(p)
    answer = page(p.admin).post(f"/judges/clicks/{grader.judge_id}/", {
        "name": "Learned PBM", "source": grader.source_id, "click_model": "pbm",
        "min_impressions": 10, "cuts": "0.1, 0.2, 0.4", "is_active": "on"})
    return Done(answer.status_code, Action.JUDGE_CHANGED, "admin", "judge", grader.judge_id,
                {"cuts": [[], [0.1, 0.2, 0.4]]}, answered=302)


def share_link_made(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team)
    answer = page(p.lead).post(f"/share/new/?evaluation={evaluation.pk}", {"days": "3"})
    link = ShareLink.objects.get()
    return Done(answer.status_code, Action.SHARE_LINK_CREATED, "lead", "share_link", link.pk,
                {"kind": [None, "dashboard"], "evaluation": [None, evaluation.pk]},
                changed={"expires_at"}, answered=200)


def share_link_revoked(p) -> Done:
    evaluation = evaluation_with_slots(team=p.team)
    link, _token = share_link_create(evaluation=evaluation, created_by=p.lead, days=3)
    answer = page(p.lead).post(f"/share-links/{link.pk}/revoke/")
    return Done(answer.status_code, Action.SHARE_LINK_REVOKED, "lead", "share_link", link.pk,
                changed={"revoked_at"}, answered=302)


def signed_in(p) -> Done:
    User.objects.create_user("grace", password="right-horse-battery-9")
    mark()
    answer = Client(REMOTE_ADDR=ADDRESS).post("/login/", {
        "username": "grace", "password": "right-horse-battery-9"})
    return Done(answer.status_code, Action.SIGN_IN, "grace", "user",
                User.objects.get(username="grace").pk, answered=302, team=False,
                secrets=("right-horse-battery-9",))


def sign_in_failed(p) -> Done:
    User.objects.create_user("grace", password="right-horse-battery-9")
    mark()
    answer = Client(REMOTE_ADDR=ADDRESS).post("/login/", {
        "username": "grace", "password": "wrong-horse-battery-1"})
    return Done(answer.status_code, Action.SIGN_IN_FAILED, "grace", "", "", answered=200,
                team=False, secrets=("wrong-horse-battery-1",))


ACTIONS: list[Callable] = [
    endpoint_created, endpoint_changed, endpoint_deleted,
    search_model_created, search_model_changed, search_model_deleted, offline_run_imported,
    evaluation_created, evaluation_changed, evaluation_cloned, evaluation_finished,
    evaluation_paused, evaluation_archived, evaluation_restored, evaluation_deleted,
    gold_item_made, gold_items_imported, baseline_set, team_created,
    query_set_created, query_set_imported, query_set_changed, query_set_edited,
    query_set_archived,
    scale_created, scale_changed, scale_deleted, transformer_saved, transformer_deleted,
    judge_created, judge_changed, judge_deleted, judge_let_count, trust_policy_changed,
    judge_run_started, judge_run_cancelled, judge_run_paused, judge_run_resumed,
    schedule_created, schedule_changed, schedule_paused, schedule_deleted,
    webhook_created, webhook_changed, webhook_deleted,
    role_changed, member_removed, invitation_made, member_added, token_made, token_revoked,
    judgments_imported, judgments_exported, pool_exported, judge_calls_exported,
    audit_trail_exported, behaviour_imported, collector_opened, clicks_grader_made,
    clicks_grader_changed, clicks_grader_edited,
    share_link_made, share_link_revoked,
    signed_in, sign_in_failed,
]


@pytest.mark.parametrize("act", ACTIONS, ids=[act.__name__ for act in ACTIONS])
def test_each_action_leaves_exactly_one_event(personas, act, tmp_path):
    MARKS.clear()
    mark()
    done = act(personas, tmp_path) if act is behaviour_imported else act(personas)
    if done.answered:
        assert done.status == done.answered
    events = list(AuditEvent.objects.filter(pk__gt=MARKS[-1]))
    assert [event.action for event in events] == [done.action]
    [event] = events
    assert event.actor_label == done.actor
    team_id = done.team if not isinstance(done.team, bool) else (
        personas.team.pk if done.team else None)
    assert event.team_id == team_id
    assert (event.object_type, event.object_id) == (done.object_type, str(done.object_id))
    # A command has no client; a request's is the connecting peer.
    assert event.client_address == (None if act is behaviour_imported else ADDRESS)
    for name, pair in done.changes.items():
        assert event.changes.get(name) == pair, (name, event.changes)
    assert done.changed <= set(event.changes), event.changes
    for secret in done.secrets:
        assert secret not in str(event.changes)


def test_every_action_is_walked():
    """A new Action needs a walk above (or a reason here why a request cannot do it)."""
    walked = {Action.SIGN_IN, Action.SIGN_IN_FAILED, Action.EVALUATION_CREATED,
              Action.EVALUATION_CHANGED, Action.EVALUATION_FINISHED, Action.EVALUATION_DELETED,
              Action.EVALUATION_PAUSED, Action.EVALUATION_ARCHIVED, Action.EVALUATION_RESTORED,
              Action.EXPORT_DOWNLOADED, Action.API_TOKEN_CREATED, Action.API_TOKEN_REVOKED,
              Action.ROLE_CHANGED, Action.MEMBER_ADDED, Action.MEMBER_REMOVED,
              Action.INVITATION_CREATED, Action.ENDPOINT_CREATED, Action.ENDPOINT_CHANGED,
              Action.ENDPOINT_DELETED, Action.SEARCH_MODEL_CREATED, Action.SEARCH_MODEL_CHANGED,
              Action.SEARCH_MODEL_DELETED, Action.OFFLINE_RUN_IMPORTED,
              Action.QUERY_SET_CREATED, Action.QUERY_SET_CHANGED, Action.SCALE_CREATED,
              Action.SCALE_CHANGED, Action.SCALE_DELETED, Action.TRANSFORMER_SAVED,
              Action.TRANSFORMER_DELETED, Action.JUDGE_CREATED, Action.JUDGE_CHANGED,
              Action.JUDGE_DELETED, Action.JUDGE_COUNTS_CHANGED,
              Action.JUDGE_TRUST_POLICY_CHANGED, Action.JUDGE_RUN_STARTED,
              Action.JUDGE_RUN_CANCELLED, Action.JUDGE_RUN_CHANGED, Action.SCHEDULE_CREATED,
              Action.SCHEDULE_CHANGED, Action.SCHEDULE_DELETED, Action.WEBHOOK_CREATED,
              Action.WEBHOOK_CHANGED, Action.WEBHOOK_DELETED, Action.JUDGMENTS_IMPORTED,
              Action.BEHAVIOUR_SOURCE_IMPORTED, Action.GOLD_ITEMS_CHANGED,
              Action.GOLD_ITEMS_IMPORTED, Action.TEAM_BASELINE_CHANGED, Action.TEAM_CREATED,
              Action.SHARE_LINK_CREATED, Action.SHARE_LINK_REVOKED,
              Action.BEHAVIOUR_SOURCE_CREATED}
    elsewhere = {
        # Started by a person through the API, by a schedule's tick, or by a judge run;
        # tests/audit/test_trail.py follows the transitions.
        Action.EVALUATION_STARTED,
        # Beat's retention job: tests/audit/test_retention.py.
        Action.TRAIL_PRUNED,
    }
    assert {action.value for action in walked | elsewhere} == set(Action.values)


def test_a_service_without_a_user_argument_names_the_api_tokens_owner(personas):
    """An endpoint's update takes no user: the actor is the request's, which DRF sets from
    the token inside the view, after the audit middleware ran (audit.context)."""
    endpoint = endpoint_of(personas.team)
    _, key = api_token_create(user=personas.admin, name="ci")
    client = APIClient(REMOTE_ADDR=ADDRESS)
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    mark()
    answer = client.patch(f"/api/v1/endpoints/{endpoint.pk}/", {"name": "Catalogue"},
                          format="json")
    assert answer.status_code == 200
    [event] = AuditEvent.objects.filter(pk__gt=MARKS[-1])
    assert (event.action, event.actor_id, event.actor_label, event.client_address) == (
        Action.ENDPOINT_CHANGED, personas.admin.pk, "admin", ADDRESS)


def test_outside_a_request_a_service_without_a_user_argument_names_nobody(personas):
    endpoint = endpoint_of(personas.team)
    endpoint_update(endpoint=endpoint, name="Catalogue")
    event = AuditEvent.objects.get(action=Action.ENDPOINT_CHANGED)
    assert (event.actor_id, event.actor_label, event.client_address) == (None, "", None)
