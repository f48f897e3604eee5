"""The per-slot CSV (the "CSV per grader" export) is the one judgments format that imports
back losslessly: evaluation export → pool import → pool export gives the same bytes."""

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from judgments import exports, imports
from judgments.formats import recognise
from judgments.grading import slots_reuse_fill
from judgments.models import FeedbackSlot, PoolImportUpload, PoolJudgment
from judgments.pool import pool_judgments_import
from judgments.scales import builtin_scale
from searchtweak.models import Membership, Role, User
from tests.metrics.builders import build_evaluation, set_grades, slot

pytestmark = pytest.mark.django_db

GRADED = builtin_scale("graded")
NOTE = 'Same shoe, "other" colour?\r\nAsk the buyer, =not a formula '


def _graded_evaluation(personas):
    """Three graders a result; "boots" returns b1 at positions 1 and 3 (pooled grades); a
    judge's grade with a reason; an unsure grade with a two-line note; formula cells."""
    evaluation = build_evaluation(
        team=personas.team, scale="graded", strategy=3,
        keywords={"=red shoes": ["@d1", "d2"], "boots": ["b1", "b2", "b1"]},
        metrics=[("ndcg", 3, {})])
    judge = User.objects.create(username="judge-gpt", is_judge=True)
    graders = [personas.owner, personas.lead, judge]
    set_grades(graders, [
        (slot(evaluation, "=red shoes", 1, 0), 3), (slot(evaluation, "=red shoes", 1, 1), 2),
        (slot(evaluation, "=red shoes", 1, 2), 3), (slot(evaluation, "=red shoes", 2, 0), 0),
        (slot(evaluation, "boots", 1, 0), 1), (slot(evaluation, "boots", 3, 1), 2),
        (slot(evaluation, "boots", 3, 0), 2),
    ])
    FeedbackSlot.objects.filter(pk=slot(evaluation, "=red shoes", 1, 2).pk).update(
        reason="-Matches the query,\nexactly.")
    FeedbackSlot.objects.filter(pk=slot(evaluation, "=red shoes", 1, 1).pk).update(
        unsure=True, note=NOTE)
    # Microseconds and another zone than UTC: the export writes UTC with microseconds.
    FeedbackSlot.objects.filter(pk=slot(evaluation, "boots", 1, 0).pk).update(
        graded_at=datetime(2026, 3, 1, 9, 30, 0, 123456, tzinfo=UTC))
    return evaluation


def test_slot_export_imports_into_a_fresh_pool_and_exports_the_same_bytes(client, personas):
    evaluation = _graded_evaluation(personas)
    exporter = APIClient()
    exporter.force_authenticate(personas.lead)
    exported = exporter.get(f"/api/v1/evaluations/{evaluation.pk}/judgments/",
                            {"format": "csv", "per_grader": "true"}).content
    rows = list(csv.reader(io.StringIO(exported.decode())))
    assert rows[0] == exports.SLOT_COLUMNS == imports.SLOT_HEADER
    assert [row[:9] for row in rows[1:]] == [
        ["'=red shoes", "'@d1", "3", "owner", "person", "", "false", "", "1"],
        ["'=red shoes", "'@d1", "2", "lead", "person", "", "true", NOTE, "1"],
        ["'=red shoes", "'@d1", "3", "judge-gpt", "judge", "'-Matches the query,\nexactly.",
         "false", "", "1"],
        ["'=red shoes", "d2", "0", "owner", "person", "", "false", "", "2"],
        ["boots", "b1", "1", "owner", "person", "", "false", "", "1"],
        ["boots", "b1", "2", "owner", "person", "", "false", "", "3"],
        ["boots", "b1", "2", "lead", "person", "", "false", "", "3"],
    ]
    assert rows[5][9] == "2026-03-01T09:30:00.123456+00:00"

    # Into the other team's empty pool through the import page, every line a grade.
    client.force_login(personas.outsider)
    response = client.post("/pool/import/", {
        "scale": "graded", "format": "csv", "duplicates": "all", "import": "1",
        "file": SimpleUploadedFile("slots.csv", exported)})
    assert response.status_code == 302
    stored = PoolJudgment.objects.get(team=personas.other_team, grader="lead", unsure=True)
    assert (stored.text, stored.doc_id, stored.note, stored.position) == (
        "=red shoes", "@d1", NOTE, 1)
    again = client.get("/pool/export/", {"scale": "graded"})
    assert again.status_code == 200 and again["Content-Type"].startswith("text/csv")
    assert again["Content-Disposition"].startswith(
        'attachment; filename="searchtweak-pool-')
    assert again.content == exported

    # And once more: the pool's own export imports back to the same bytes.
    client.post("/pool/import/", {"scale": "graded", "format": "csv", "import": "1",
                                  "file": SimpleUploadedFile("again.csv", again.content)})
    assert PoolJudgment.objects.filter(team=personas.other_team).count() == 7
    assert client.get("/pool/export/", {"scale": "graded"}).content == exported


def test_the_json_export_carries_the_unsure_note(personas):
    evaluation = _graded_evaluation(personas)
    judgments = exports.judgments_json(evaluation)["judgments"]
    unsure = [(j["grader"], j["unsure"], j["note"]) for j in judgments if j["unsure"]]
    assert unsure == [("lead", True, NOTE)]
    assert {j["note"] for j in judgments if not j["unsure"]} == {""}


def _repeats_file() -> bytes:
    return (
        b"keyword,doc_id,grade,grader,grader_kind,reason,unsure,note,position,graded_at\n"
        b"q,d1,1,ann,person,,false,,1,2026-01-02T00:00:00+00:00\n"
        b"q,d1,3,bob,person,,false,,1,2026-01-03T00:00:00+00:00\n"
        b"q,d1,2,cid,person,,false,,1,2026-01-01T00:00:00+00:00\n"
        b"q,d2,0,ann,person,,false,,2,\n"
        b"q,d2,1,(import),,,false,,2,\n"
        b"q,d3,2,ann,person,,false,,3,\n"
    )


def test_the_newest_policy_keeps_the_latest_graded_line_of_each_pair():
    result = recognise.parse_content(kind="csv", content=_repeats_file(), mapping=None,
                                   scale=GRADED, duplicates="newest")
    assert result.ok
    # d1: bob's grade is the latest; d2: neither has a time, so the later line wins.
    assert [(j.doc_id, j.grade, j.grader) for j in result.judgments] == [
        ("d1", 3, "bob"), ("d2", 1, "(import)"), ("d3", 2, "ann")]
    assert (result.repeated_pairs, result.repeated_lines, result.dropped_count) == (2, 3, 3)
    everything = recognise.parse_content(kind="csv", content=_repeats_file(), mapping=None,
                                       scale=GRADED, duplicates="all")
    assert len(everything.judgments) == 6 and everything.dropped_count == 0


def test_the_preview_says_what_happens_to_repeated_pairs_and_the_choice_is_applied(
        client, personas):
    client.force_login(personas.lead)
    response = client.post("/pool/import/", {
        "scale": "graded", "format": "csv", "duplicates": "all", "preview": "1",
        "file": SimpleUploadedFile("r.csv", _repeats_file())})
    page = response.content.decode()
    assert ("2 keyword/document pairs appear on more than one line (3 extra lines): every "
            "line is imported as a separate grade") in page
    assert "6 judgments for 1 keyword can be imported" in page
    token = response.context["upload_token"]
    # The other choice, previewed again from the kept file: no file chosen this time.
    response = client.post("/pool/import/", {
        "scale": "graded", "format": "csv", "duplicates": "newest", "preview": "1",
        "upload": token})
    page = response.content.decode()
    assert ("only the newest line of each pair is imported (latest graded_at, else the later "
            "line); 3 lines are dropped.") in page
    assert "3 judgments for 1 keyword can be imported" in page
    response = client.post("/pool/import/", {
        "scale": "graded", "format": "csv", "duplicates": "newest", "import": "1",
        "upload": token})
    assert response.status_code == 302
    assert sorted(PoolJudgment.objects.values_list("doc_id", "grade", "grader")) == [
        ("d1", 3, "bob"), ("d2", 1, "(import)"), ("d3", 2, "ann")]


def test_a_previewed_file_is_imported_without_choosing_it_again_once(client, personas):
    client.force_login(personas.lead)
    response = client.post("/pool/import/", {
        "scale": "graded", "format": "csv", "preview": "1",
        "file": SimpleUploadedFile("kept.csv", b"laptop,d1,3\nlaptop,d2,0\n")})
    assert not PoolJudgment.objects.exists()
    token = response.context["upload_token"]
    page = response.content.decode()
    assert f'name="upload" value="{token}"' in page and "kept.csv" in page
    response = client.post("/pool/import/", {"scale": "graded", "format": "csv",
                                             "import": "1", "upload": token})
    assert response.status_code == 302
    assert sorted(PoolJudgment.objects.values_list("doc_id", "grade", "source")) == [
        ("d1", 3, "csv: kept.csv"), ("d2", 0, "csv: kept.csv")]
    # Imported, the kept file is gone: the token imports nothing twice.
    assert not PoolImportUpload.objects.exists()
    response = client.post("/pool/import/", {"scale": "graded", "format": "csv",
                                             "import": "1", "upload": token})
    assert response.status_code == 400
    assert response.context["form"].errors["file"] == ["Choose a file."]


@pytest.mark.parametrize(("minutes", "imported"), [(59, True), (60, True), (61, False)])
def test_a_previewed_file_is_kept_for_an_hour(client, personas, minutes, imported):
    previewed_at = datetime(2025, 3, 1, 9, 0, 0, 250_000, tzinfo=UTC)
    client.force_login(personas.lead)
    with time_machine.travel(previewed_at, tick=False):
        token = client.post("/pool/import/", {
            "scale": "graded", "format": "csv", "preview": "1",
            "file": SimpleUploadedFile("kept.csv", b"laptop,d1,3\n")}).context["upload_token"]
    with time_machine.travel(previewed_at + timedelta(minutes=minutes), tick=False):
        response = client.post("/pool/import/", {"scale": "graded", "format": "csv",
                                                 "import": "1", "upload": token})
    if imported:
        assert response.status_code == 302
        assert list(PoolJudgment.objects.values_list("doc_id", "grade")) == [("d1", 3)]
    else:
        assert response.status_code == 400
        assert response.context["form"].errors["file"] == ["Choose a file."]
        assert not PoolJudgment.objects.exists()


def test_a_kept_file_is_only_its_uploaders(client, personas):
    client.force_login(personas.lead)
    token = client.post("/pool/import/", {
        "scale": "graded", "format": "csv", "preview": "1",
        "file": SimpleUploadedFile("kept.csv", b"laptop,d1,3\n")}).context["upload_token"]
    client.force_login(personas.owner)
    response = client.post("/pool/import/", {"scale": "graded", "format": "csv",
                                             "import": "1", "upload": token})
    assert response.status_code == 400 and not PoolJudgment.objects.exists()
    assert PoolImportUpload.objects.count() == 1


def test_a_kept_file_imports_only_into_the_team_it_was_previewed_in(client, personas):
    # The same uploader, now in another team of theirs: the kept file stays with its team.
    Membership.objects.create(team=personas.other_team, user=personas.lead, role=Role.LEAD)
    client.force_login(personas.lead)
    token = client.post("/pool/import/", {
        "scale": "graded", "format": "csv", "preview": "1",
        "file": SimpleUploadedFile("kept.csv", b"laptop,d1,3\n")}).context["upload_token"]
    User.objects.filter(pk=personas.lead.pk).update(current_team=personas.other_team)
    response = client.post("/pool/import/", {"scale": "graded", "format": "csv",
                                             "import": "1", "upload": token})
    assert response.status_code == 400 and not PoolJudgment.objects.exists()
    assert PoolImportUpload.objects.count() == 1


def test_mean_grades_are_refused_with_a_pointer_to_the_per_slot_export(client, personas):
    client.force_login(personas.lead)
    response = client.post("/pool/import/", {
        "scale": "graded", "format": "csv", "import": "1",
        "file": SimpleUploadedFile("m.csv", b"keyword,doc_id,grade\nLaptop,d1,2.6667\n")})
    assert response.status_code == 400
    assert response.context["preview"]["errors"] == [
        "line 2: grade '2.6667' is not an integer: a mean of several grades (the averaged "
        "CSV export) cannot be imported; export “CSV per grader”, which has one grade a "
        "line, and import that"]
    assert not PoolJudgment.objects.exists()


@pytest.mark.parametrize(("cells", "message"), [
    ("q,d,1,a,robot,,false,,1,", "grader_kind 'robot' is not person, judge or empty"),
    ("q,d,1,a,person,,maybe,,1,", "unsure 'maybe' is not true or false"),
    ("q,d,1,a,person,,false,,0,", "position '0' is not a positive integer"),
    ("q,d,1,a,person,,false,,1,yesterday", "graded_at 'yesterday' is not an ISO 8601 time"),
    ("q,d,1,a,person,,false,,1", "expected 10 columns"),
])
def test_a_wrong_slot_column_is_a_named_error(cells, message):
    content = (",".join(imports.SLOT_HEADER) + "\n" + cells + "\n").encode()
    result = imports.parse_csv(content, scale=GRADED)
    assert not result.ok and result.errors[0].startswith(f"line 2: {message}")


def test_unsure_imported_grades_do_not_fill_slots(personas):
    content = (",".join(imports.SLOT_HEADER) + "\n"
               "laptop,d1,3,ann,person,,true,not sure,1,\n"
               "laptop,d2,2,ann,person,,false,,2,\n").encode()
    parsed = imports.parse_csv(content, scale=GRADED)
    pool_judgments_import(team=personas.team, scale="graded",
                          judgments=parsed.judgments, source="t", user=None)
    evaluation = build_evaluation(team=personas.team, scale="graded", strategy=1,
                                  keywords={"laptop": ["d1", "d2"]}, metrics=[("ndcg", 2, {})])
    keyword = evaluation.keywords.get()
    slots_reuse_fill(evaluation=evaluation, keyword=keyword,
                     snapshots=list(keyword.snapshots.order_by("position")))
    assert list(FeedbackSlot.objects.filter(evaluation=evaluation).order_by("position")
                .values_list("snapshot__doc_id", "grade")) == [("d1", None), ("d2", 2)]


def test_the_pool_export_needs_a_known_scale_a_get_and_the_lead_role(client, personas):
    client.force_login(personas.lead)
    assert client.get("/pool/export/", {"scale": "nope"}).status_code == 404
    assert client.get("/pool/export/").status_code == 404
    assert client.post("/pool/export/", {"scale": "graded"}).status_code == 405
    empty = client.get("/pool/export/", {"scale": "graded"})
    assert empty.content.decode() == ",".join(imports.SLOT_HEADER) + "\n"
    client.force_login(personas.grader)
    assert client.get("/pool/export/", {"scale": "graded"}).status_code == 403


def test_the_api_import_applies_the_duplicates_policy_and_its_dry_run_says_so(personas):
    evaluation = build_evaluation(team=personas.team, scale="graded", strategy=1,
                                  keywords={"q": ["d1"]}, metrics=[("ndcg", 1, {})])
    api = APIClient()
    api.force_authenticate(personas.lead)
    url = f"/api/v1/evaluations/{evaluation.pk}/judgments/"

    def post(query: str, policy: str):
        upload = io.BytesIO(_repeats_file())
        upload.name = "r.csv"
        return api.post(url + query, {"file": upload, "duplicates": policy}, format="multipart")

    dry = post("?dry_run=true", "newest").json()
    assert (dry["would_import"], dry["repeated_pairs"], dry["dropped"],
            dry["duplicate_policy"]) == (3, 2, 3, "newest")
    assert dry["repeats"].startswith("2 keyword/document pairs appear on more than one line")
    assert dry["preview"][0] == {"line": 3, "keyword": "q", "doc_id": "d1", "grade": 3,
                                 "grader": "bob", "grader_kind": "person", "unsure": False,
                                 "note": ""}
    response = post("", "newest")
    assert response.status_code == 201 and response.json()["dropped"] == 3
    assert PoolJudgment.objects.count() == 3
    assert post("", "oldest").status_code == 400
    response = post("", "all")
    assert response.status_code == 201 and response.json()["imported"] == 6
    # The same pairs again: the file's six grades replace the three imported before.
    assert response.json()["replaced"] == 3 and PoolJudgment.objects.count() == 6
