"""Offline models: a run file uploaded over the API stands in for an endpoint; the
evaluation takes its snapshots from it at start and is graded and measured as any other."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Keyword, OfflineRanking, OfflineRun, SearchModel
from evaluations.offline_runs.services import search_model_create_offline
from judgments.grading import feedback_submit
from judgments.models import FeedbackSlot
from metrics.models import KeywordMetricValue, MetricMean

pytestmark = pytest.mark.django_db

# Three keywords by topic id; lines out of rank order, "3" deeper than P@3 reads.
TOPICS = "1\tred shoes\n2\thats\n3\tsocks\n"
RUN = ("1 Q0 d2 2 0.8 bm25\n1 Q0 d1 1 0.9 bm25\n1 Q0 d3 3 0.7 bm25\n"
       "2 Q0 h1 1 3 bm25\n2 Q0 h2 2 2 bm25\n2 Q0 h3 3 1 bm25\n"
       "3 Q0 s1 1 4 bm25\n3 Q0 s2 2 3 bm25\n3 Q0 s3 3 2 bm25\n3 Q0 s4 4 1 bm25\n")


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def upload(client: APIClient, model_id: int, run: str, *, run_format: str = "trec",
           topics: str | None = None):
    data = {"format": run_format, "file": SimpleUploadedFile("bm25.run", run.encode())}
    if topics is not None:
        data["topics"] = SimpleUploadedFile("topics.tsv", topics.encode())
    return client.post(f"/api/v1/models/{model_id}/run/", data, format="multipart")


def rankings(evaluation: Evaluation) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for keyword in evaluation.keywords.order_by("position"):
        found[keyword.text] = list(keyword.snapshots.order_by("position")
                                   .values_list("doc_id", flat=True))
    return found


def grade_all(evaluation: Evaluation, user, grades: dict[str, list[int]]) -> None:
    """The grader takes each result's slot and grades it through the grading service."""
    for text, values in grades.items():
        for position, value in enumerate(values, start=1):
            slot = FeedbackSlot.objects.get(evaluation=evaluation, keyword__text=text,
                                            snapshot__position=position, index=0)
            FeedbackSlot.objects.filter(pk=slot.pk).update(
                user=user, assigned_at=timezone.now(),
                lease_expires_at=timezone.now() + timedelta(minutes=5))
            feedback_submit(user=user, slot_id=slot.pk, grade=value)


def test_an_uploaded_trec_run_is_fetched_graded_and_measured(
        personas, django_capture_on_commit_callbacks):
    admin = client_for(personas.admin)
    created = admin.post("/api/v1/models/offline/", {"name": "BM25 run"}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["endpoint"] is None
    model_id = created.json()["id"]
    uploaded = upload(admin, model_id, RUN, topics=TOPICS)
    assert uploaded.status_code == 201, uploaded.json()
    assert (uploaded.json()["keyword_count"], uploaded.json()["result_count"]) == (3, 10)

    payload = {"name": "Offline", "model": model_id, "scale": "binary", "strategy": 1,
               "keywords": ["red shoes", "Hats", "socks", "gloves"],
               "metrics": [{"code": "precision", "k": 3}], "transformers": {}}
    lead = client_for(personas.lead)
    response = lead.post("/api/v1/evaluations/", payload, format="json")
    assert response.status_code == 201, response.json()
    evaluation_id = response.json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        started = lead.post(f"/api/v1/evaluations/{evaluation_id}/start/")
    assert started.status_code == 200, started.json()

    evaluation = Evaluation.objects.get(pk=evaluation_id)
    assert evaluation.status == Evaluation.Status.ACTIVE
    # The file's ranking, cut at the deepest k (3); "gloves" is not in the file: it
    # returned nothing, fetched like a live endpoint's empty answer.
    assert rankings(evaluation) == {"red shoes": ["d1", "d2", "d3"], "Hats": ["h1", "h2", "h3"],
                                    "socks": ["s1", "s2", "s3"], "gloves": []}
    assert set(evaluation.keywords.values_list("fetch_status", flat=True)) == {"fetched"}
    assert FeedbackSlot.objects.filter(evaluation=evaluation).count() == 9

    with django_capture_on_commit_callbacks(execute=True):
        grade_all(evaluation, personas.grader, {"red shoes": [1, 0, 1], "Hats": [1, 0, 0],
                                                "socks": [1, 1, 1]})
    # P@3 = relevant / judged: 2/3, 1/3 and 3/3; "gloves" has none (null), so the mean is
    # over three keywords: (2/3 + 1/3 + 1) / 3 = 2/3.
    values = dict(KeywordMetricValue.objects.filter(metric__evaluation=evaluation)
                  .values_list("keyword__text", "value"))
    assert values["red shoes"] == pytest.approx(2 / 3)
    assert values["Hats"] == pytest.approx(1 / 3)
    assert values["socks"] == pytest.approx(1.0)
    assert values.get("gloves") is None
    mean = MetricMean.objects.get(metric__evaluation=evaluation)
    assert (mean.value, mean.keyword_count) == (pytest.approx(2 / 3), 3)



def test_an_offline_evaluations_pages_render(client, personas,
                                             django_capture_on_commit_callbacks):
    model = search_model_create_offline(team=personas.team, created_by=None, name="BM25 run")
    admin = client_for(personas.admin)
    assert upload(admin, model.pk, RUN, topics=TOPICS).status_code == 201
    lead = client_for(personas.lead)
    created = lead.post("/api/v1/evaluations/", {
        "name": "Offline", "model": model.pk, "scale": "binary", "strategy": 1,
        "keywords": ["red shoes"], "metrics": [{"code": "precision", "k": 3}],
        "transformers": {}}, format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        lead.post(f"/api/v1/evaluations/{created['id']}/start/")
    client.force_login(personas.lead)
    page = client.get(f"/evaluations/{created['id']}/")
    assert page.status_code == 200
    assert "BM25 run <span class=\"help\">offline run</span>" in page.content.decode()
    client.force_login(personas.admin)
    assert client.get(f"/models/{model.pk}/").url == f"/models/{model.pk}/run/"
    run_page = client.get(f"/models/{model.pk}/run/").content.decode()
    assert "3 keywords, 10 results" in run_page


def test_a_bad_run_file_is_400_naming_the_line_and_stores_nothing(personas):
    model = search_model_create_offline(team=personas.team, created_by=None, name="Run")
    admin = client_for(personas.admin)
    assert upload(admin, model.pk, "a Q0 d1 1 1 t\n").status_code == 201
    response = upload(admin, model.pk, "b Q0 d1 1 1 t\nb Q0 d2 two 1 t\n")
    assert response.status_code == 400
    assert response.json() == {"file": ["line 2, rank: 'two' is not a whole number"]}
    # The run before stays whole: nothing of the bad file was written.
    assert list(OfflineRanking.objects.values_list("keyword", flat=True)) == ["a"]
    assert OfflineRun.objects.count() == 1


def test_a_topic_mapping_line_without_a_tab_is_400_naming_it(personas):
    model = search_model_create_offline(team=personas.team, created_by=None, name="Run")
    response = upload(client_for(personas.admin), model.pk, "1 Q0 d 1 1 t\n",
                      topics="1 red shoes\n")
    assert response.status_code == 400
    assert response.json() == {"topics": ["line 1, qid: expected qid<TAB>keyword"]}
    assert not OfflineRun.objects.exists()


def test_outsiders_get_404_and_leads_403_for_a_models_run(personas):
    model = search_model_create_offline(team=personas.team, created_by=None, name="Run")
    assert upload(client_for(personas.outsider), model.pk, "a Q0 d 1 1 t\n").status_code == 404
    assert upload(client_for(personas.lead), model.pk, "a Q0 d 1 1 t\n").status_code == 403
    assert client_for(personas.outsider).post(
        "/api/v1/models/offline/", {"name": "x", "team": personas.team.pk},
        format="json").status_code == 404
    assert not OfflineRun.objects.exists()
    assert SearchModel.objects.count() == 1


def test_a_run_is_refused_for_a_model_that_queries_an_endpoint(personas):
    from tests.evaluations.factories import SearchModelFactory
    model = SearchModelFactory(endpoint__team=personas.team)
    response = upload(client_for(personas.admin), model.pk, "a Q0 d 1 1 t\n")
    assert response.status_code == 400
    assert "offline models only" in response.json()["model"][0]


def test_an_offline_model_without_a_run_does_not_start(personas):
    model = search_model_create_offline(team=personas.team, created_by=None, name="Run")
    lead = client_for(personas.lead)
    response = lead.post("/api/v1/evaluations/", {
        "name": "E", "model": model.pk, "scale": "binary", "strategy": 1, "keywords": ["a"],
        "metrics": [{"code": "precision", "k": 3}], "transformers": {}}, format="json")
    assert response.status_code == 201, response.json()
    started = lead.post(f"/api/v1/evaluations/{response.json()['id']}/start/")
    assert started.status_code == 400
    assert "no run file yet" in started.json()["model"][0]
    assert set(Keyword.objects.values_list("fetch_status", flat=True)) == {"pending"}


def snapshot_rows(evaluation: Evaluation) -> dict[str, list[tuple]]:
    return {keyword.text: list(keyword.snapshots.order_by("position").values_list(
        "doc_id", "name", "image", "fields")) for keyword in evaluation.keywords.all()}


def test_a_jsonl_run_export_imports_back_as_the_same_snapshots(
        personas, django_capture_on_commit_callbacks):
    from tests.metrics.builders import build_evaluation
    source = build_evaluation(team=personas.team, keywords={
        "red shoes": ["a", "b", "c"], "Hats": ["h 1"], "socks": []},
        metrics=[("precision", 3, {})])
    Snapshot = source.keywords.get(text="red shoes").snapshots.model
    Snapshot.objects.filter(keyword__evaluation=source, doc_id="b").update(
        name="Boot \u2028 B", image="http://img/b.png", fields={"Price": 3.5, "Tags": ["x"]})
    lead, admin = client_for(personas.lead), client_for(personas.admin)
    exported = lead.get(f"/api/v1/evaluations/{source.pk}/judgments/?format=run_jsonl")
    assert exported.status_code == 200
    text = b"".join(exported.streaming_content).decode()
    assert text.splitlines()[2] == '{"keyword":"socks","results":[]}'

    model = search_model_create_offline(team=personas.team, created_by=None, name="Replay")
    assert upload(admin, model.pk, text, run_format="jsonl").status_code == 201
    created = lead.post("/api/v1/evaluations/", {
        "name": "Replay", "model": model.pk, "scale": "graded", "strategy": 1,
        "keywords": ["red shoes", "Hats", "socks"], "metrics": [{"code": "precision", "k": 3}],
        "transformers": {}}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        lead.post(f"/api/v1/evaluations/{created.json()['id']}/start/")
    replay = Evaluation.objects.get(pk=created.json()["id"])
    assert snapshot_rows(replay) == snapshot_rows(source)
    assert snapshot_rows(replay)["red shoes"][1] == (
        "b", "Boot \u2028 B", "http://img/b.png", {"Price": 3.5, "Tags": ["x"]})


def test_the_page_creates_an_offline_model_with_its_run(client, personas):
    client.force_login(personas.admin)
    response = client.post("/models/offline/new/", {
        "name": "Nightly", "description": "", "format": "jsonl",
        "file": SimpleUploadedFile("run.jsonl", b'{"keyword": "Shoes", "results": '
                                   b'[{"doc_id": "a"}, {"doc_id": "b"}]}\n')})
    assert response.status_code == 302, response.content.decode()[:2000]
    model = SearchModel.objects.get(name="Nightly")
    assert model.is_offline
    assert list(OfflineRanking.objects.filter(run__model=model).values_list(
        "keyword", "documents")) == [("shoes", [{"doc_id": "a"}, {"doc_id": "b"}])]
    listed = client.get("/models/").content.decode()
    assert f'href="/models/{model.pk}/run/"' in listed


def test_the_page_names_the_bad_line_and_creates_no_model(client, personas):
    client.force_login(personas.admin)
    response = client.post("/models/offline/new/", {
        "name": "Nightly", "description": "", "format": "trec",
        "file": SimpleUploadedFile("run.txt", b"q Q0 a 1 1 t\nq Q0 b 2\n")})
    assert response.status_code == 400
    assert "line 2, columns: expected 6 columns" in response.content.decode()
    assert not SearchModel.objects.exists() and not OfflineRun.objects.exists()


def test_an_offline_model_cannot_be_scheduled(personas):
    from django.core.exceptions import ValidationError

    from evaluations.query_sets.services import query_set_create
    from schedules.services import schedule_create
    model = search_model_create_offline(team=personas.team, created_by=None, name="Run")
    query_set = query_set_create(team=personas.team, created_by=personas.lead, name="Q",
                                 keywords=["shoes"])
    with pytest.raises(ValidationError) as caught:
        schedule_create(team=personas.team, created_by=personas.lead, name="Nightly",
                        model=model, query_set=query_set, scale="graded", strategy=1,
                        metrics=[{"code": "ndcg", "k": 10, "params": {}}], interval_minutes=60)
    assert "cannot be scheduled" in caught.value.message_dict["model"][0]


def test_trec_topic_ids_can_number_a_query_sets_keywords(personas):
    from evaluations.query_sets.services import query_set_create
    model = search_model_create_offline(team=personas.team, created_by=None, name="Run")
    query_set = query_set_create(team=personas.team, created_by=personas.lead, name="Q",
                                 keywords=["Red Shoes", "hats"])
    admin = client_for(personas.admin)
    response = admin.post(f"/api/v1/models/{model.pk}/run/", {
        "format": "trec", "query_set": query_set.pk,
        "file": SimpleUploadedFile("r.run", b"2 Q0 h1 1 1 t\n1 Q0 s1 1 1 t\n")},
        format="multipart")
    assert response.status_code == 201, response.json()
    assert dict(OfflineRanking.objects.values_list("keyword", "documents__0__doc_id")) == {
        "red shoes": "s1", "hats": "h1"}
    # A topic the query set does not number is named with its line.
    response = admin.post(f"/api/v1/models/{model.pk}/run/", {
        "format": "trec", "query_set": query_set.pk,
        "file": SimpleUploadedFile("r.run", b"1 Q0 s1 1 1 t\n3 Q0 x 1 1 t\n")},
        format="multipart")
    assert response.json() == {"file": ["line 2, qid: '3' is not in the topic mapping"]}
    other = query_set_create(team=personas.other_team, created_by=None, name="Theirs",
                             keywords=["x"])
    response = admin.post(f"/api/v1/models/{model.pk}/run/", {
        "format": "trec", "query_set": other.pk,
        "file": SimpleUploadedFile("r.run", b"1 Q0 s1 1 1 t\n")}, format="multipart")
    assert response.json() == {"query_set": ["No such query set in this team."]}


def test_a_run_file_over_the_byte_cap_is_refused_before_a_line_is_read(personas, settings):
    settings.OFFLINE_RUN_MAX_BYTES = 2_000
    model = search_model_create_offline(team=personas.team, created_by=None, name="Run")
    admin = client_for(personas.admin)
    assert upload(admin, model.pk, "a Q0 d1 1 1 t\n").status_code == 201
    # 125 topics of one 16-byte line: 2,000 bytes. One byte more (a longer tag) is refused
    # for its size alone, and the run before is kept.
    body = "".join(f"q{n:03} Q0 d 1 1 t\n" for n in range(125))
    assert len(body) == 2_000
    response = upload(admin, model.pk, body.replace(" t\n", " tt\n", 1))
    assert response.status_code == 400
    assert response.json() == {"file": [
        "bm25.run is 2,001 bytes; a run file may be at most 2,000 bytes "
        "(OFFLINE_RUN_MAX_BYTES). Nothing was read from it."]}
    assert list(OfflineRanking.objects.values_list("keyword", flat=True)) == ["a"]
    # At the cap exactly, a file is read.
    assert upload(admin, model.pk, body).status_code == 201
    assert OfflineRanking.objects.count() == 125
    # The topic mapping is capped alike.
    response = upload(admin, model.pk, "1 Q0 d 1 1 t\n", topics="1\tred\n" * 334)
    assert response.status_code == 400
    assert response.json() == {"topics": [
        "topics.tsv is 2,004 bytes; a run file may be at most 2,000 bytes "
        "(OFFLINE_RUN_MAX_BYTES). Nothing was read from it."]}
    assert OfflineRanking.objects.count() == 125


def test_the_page_refuses_a_run_file_over_the_cap_and_creates_no_model(
    client, personas, settings
):
    settings.OFFLINE_RUN_MAX_BYTES = 1_500_000
    client.force_login(personas.admin)
    response = client.post("/models/offline/new/", {
        "name": "Nightly", "description": "", "format": "trec",
        "file": SimpleUploadedFile("run.txt", b"q Q0 a 1 1 t\n" * 125_000)})
    assert response.status_code == 400
    assert response.context["form"].errors["file"] == [
        "run.txt is 1.6 MB; a run file may be at most 1.5 MB (OFFLINE_RUN_MAX_BYTES). "
        "Nothing was read from it."]
    assert not SearchModel.objects.exists() and not OfflineRun.objects.exists()


def test_a_trec_run_export_with_its_qid_mapping_imports_back_and_exports_the_same_lines(
        personas, django_capture_on_commit_callbacks):
    """export → import → export for the TREC run: the evaluation's `trec_run` and
    `trec_mapping` uploaded for an offline model give an evaluation whose own `trec_run` is
    the same lines; only the tag names the evaluation that wrote it."""
    from tests.metrics.builders import build_evaluation
    source = build_evaluation(team=personas.team, keywords={
        "Red Shoes": ["d-1", "d2", "d3", "d:4"], "hats": ["h1"], "socks": ["s9", "s1"],
        "gloves": []}, metrics=[("precision", 5, {})])
    lead, admin = client_for(personas.lead), client_for(personas.admin)
    url = f"/api/v1/evaluations/{source.pk}/judgments/"
    run = b"".join(lead.get(f"{url}?format=trec_run").streaming_content).decode()
    mapping = b"".join(lead.get(f"{url}?format=trec_mapping").streaming_content).decode()
    assert mapping == "1\tRed Shoes\n2\thats\n3\tsocks\n4\tgloves\n"
    tag = f"searchtweak-{source.pk}"
    assert run.splitlines()[:5] == [f"1 Q0 d-1 1 4 {tag}", f"1 Q0 d2 2 3 {tag}",
                                    f"1 Q0 d3 3 2 {tag}", f"1 Q0 d:4 4 1 {tag}",
                                    f"2 Q0 h1 1 1 {tag}"]

    model = search_model_create_offline(team=personas.team, created_by=None, name="Replay")
    uploaded = upload(admin, model.pk, run, topics=mapping)
    assert uploaded.status_code == 201, uploaded.json()
    # gloves ranked nothing: it has no line in the run, so the run ranks three keywords.
    assert (uploaded.json()["keyword_count"], uploaded.json()["result_count"]) == (3, 7)
    created = lead.post("/api/v1/evaluations/", {
        "name": "Replay", "model": model.pk, "scale": "graded", "strategy": 1,
        "keywords": ["Red Shoes", "hats", "socks", "gloves"],
        "metrics": [{"code": "precision", "k": 5}], "transformers": {}}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        lead.post(f"/api/v1/evaluations/{created.json()['id']}/start/")
    replay = Evaluation.objects.get(pk=created.json()["id"])
    again = b"".join(lead.get(f"/api/v1/evaluations/{replay.pk}/judgments/?format=trec_run")
                     .streaming_content).decode()
    assert again == run.replace(tag, f"searchtweak-{replay.pk}")
    assert rankings(replay) == rankings(source)
