"""Export of an evaluation's judgments and import into the team's pool (API and parsing)."""

import io
import json
from datetime import UTC, date

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from evaluations.models import Evaluation
from judgments import exports, imports
from judgments.formats import trec
from judgments.models import FeedbackSlot, PoolJudgment
from judgments.scales import builtin_scale
from metrics.models import KeywordMetricValue
from searchtweak.csv_cells import csv_cell, csv_cell_read
from tests.metrics.builders import build_evaluation, set_grades, slot

pytestmark = pytest.mark.django_db

GRADED = builtin_scale("graded")


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def graded(personas):
    """3 graders per result: laptop d1 grades 3,3,2 (mean 2.6667), d2 0,1,- (0.5), d3 none;
    phone p1 1,1,1."""
    evaluation = build_evaluation(
        team=personas.team, scale="graded", strategy=3,
        keywords={"Laptop": ["d1", "d2", "d3"], "phone": ["p1"]},
        metrics=[("ndcg", 3, {})],
    )
    graders = [personas.owner, personas.lead, personas.grader]
    set_grades(graders, [
        (slot(evaluation, "laptop", 1, 0), 3), (slot(evaluation, "laptop", 1, 1), 3),
        (slot(evaluation, "laptop", 1, 2), 2), (slot(evaluation, "laptop", 2, 0), 0),
        (slot(evaluation, "laptop", 2, 1), 1), (slot(evaluation, "phone", 1, 0), 1),
        (slot(evaluation, "phone", 1, 1), 1), (slot(evaluation, "phone", 1, 2), 1),
    ])
    return evaluation


def _url(evaluation, query=""):
    return f"/api/v1/evaluations/{evaluation.pk}/judgments/{query}"


# --- export ---


def test_json_export_lists_every_slot_and_is_marked_partial(personas, graded):
    response = client_for(personas.owner).get(_url(graded, "?format=json"))
    assert response.status_code == 200
    assert response["X-SearchTweak-Partial"] == "true"
    body = response.json()
    assert (body["partial"], body["scale"], len(body["judgments"])) == (True, "graded", 12)
    first = body["judgments"][0]
    assert (first["keyword"], first["doc_id"], first["position"], first["slot"],
            first["grader"], first["grade"]) == ("Laptop", "d1", 1, 0, "owner", 3)
    assert first["graded_at"] is not None
    empty = [j for j in body["judgments"] if j["doc_id"] == "d3"]
    assert [j["grade"] for j in empty] == [None, None, None]


def test_finished_evaluation_is_not_partial(personas, graded):
    Evaluation.objects.filter(pk=graded.pk).update(status=Evaluation.Status.FINISHED)
    response = client_for(personas.lead).get(_url(graded))
    assert response["X-SearchTweak-Partial"] == "false" and response.json()["partial"] is False


def test_csv_export_aggregates_with_the_mean_and_leaves_ungraded_documents_out(
        personas, graded):
    response = client_for(personas.owner).get(_url(graded, "?format=csv"))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["X-SearchTweak-Partial"] == "true"
    assert response.content.decode() == (
        "keyword,doc_id,grade\nLaptop,d1,2.6667\nLaptop,d2,0.5\nphone,p1,1\n")


def test_per_grader_csv_has_one_line_per_graded_slot(personas, graded):
    text = client_for(personas.owner).get(
        _url(graded, "?format=csv&per_grader=true")).content.decode()
    lines = text.splitlines()
    # The earlier six columns first, so readers of the earlier per-grader file keep working.
    assert lines[0] == ("keyword,doc_id,grade,grader,grader_kind,reason,unsure,note,position,"
                        "graded_at")
    slots = FeedbackSlot.objects.filter(evaluation=graded, keyword__text="Laptop",
                                        snapshot__position=1).order_by("index")
    stamps = [s.graded_at.astimezone(UTC).isoformat() for s in slots]
    assert stamps[0].endswith("+00:00")
    assert lines[1:4] == [f"Laptop,d1,3,owner,person,,false,,1,{stamps[0]}",
                          f"Laptop,d1,3,lead,person,,false,,1,{stamps[1]}",
                          f"Laptop,d1,2,grader,person,,false,,1,{stamps[2]}"]
    assert len(lines) == 9


def test_binary_majority_leaves_ties_out(personas):
    evaluation = build_evaluation(team=personas.team, scale="binary", strategy=3,
                                  keywords={"q": ["a", "b"]}, metrics=[("precision", 2, {})])
    set_grades([personas.owner, personas.lead, personas.grader], [
        (slot(evaluation, "q", 1, 0), 1), (slot(evaluation, "q", 1, 1), 1),
        (slot(evaluation, "q", 1, 2), 0), (slot(evaluation, "q", 2, 0), 1),
        (slot(evaluation, "q", 2, 1), 0),
    ])
    assert exports.judgments_csv(evaluation) == "keyword,doc_id,grade\nq,a,1\n"
    assert exports.qrels(evaluation) == "1 0 a 1\n"


def test_trec_qrels_mapping_and_run(personas, graded):
    client = client_for(personas.owner)
    qrels = client.get(_url(graded, "?format=trec"))
    assert qrels["Content-Type"].startswith("text/plain")
    # 2.6667 rounds to 3, 0.5 rounds half up to 1.
    assert qrels.content.decode() == "1 0 d1 3\n1 0 d2 1\n2 0 p1 1\n"
    mapping = client.get(_url(graded, "?format=trec_mapping")).content.decode()
    assert mapping == "1\tLaptop\n2\tphone\n"
    run = client.get(_url(graded, "?format=trec_run")).content.decode()
    tag = f"searchtweak-{graded.pk}"
    assert run.splitlines() == [
        f"1 Q0 d1 1 3 {tag}", f"1 Q0 d2 2 2 {tag}", f"1 Q0 d3 3 1 {tag}", f"2 Q0 p1 1 1 {tag}"]


@pytest.mark.parametrize(("query", "disposition"), [
    ("?format=json&download=1", "attachment; filename=\"searchtweak-{slug}-judgments-{day}.json\""),
    ("?format=json", "inline; filename=\"searchtweak-{slug}-judgments-{day}.json\""),
    ("?format=csv", "attachment; filename=\"searchtweak-{slug}-judgments-{day}.csv\""),
    ("?format=csv&per_grader=true",
     "attachment; filename=\"searchtweak-{slug}-judgments-per-grader-{day}.csv\""),
    ("?format=trec", "attachment; filename=\"searchtweak-{slug}-judgments-{day}.trec\""),
    ("?format=trec_mapping",
     "attachment; filename=\"searchtweak-{slug}-qid-mapping-{day}.tsv\""),
    ("?format=trec_run", "attachment; filename=\"searchtweak-{slug}-run-{day}.run\""),
])
def test_each_export_is_named_for_the_evaluation_its_format_and_the_day(
        personas, graded, query, disposition):
    Evaluation.objects.filter(pk=graded.pk).update(name="Shoes: Q3 / BM25 vs. ÉLSER")
    response = client_for(personas.owner).get(_url(graded, query))
    assert response.status_code == 200
    day = timezone.localdate().strftime("%Y%m%d")
    assert response["Content-Disposition"] == disposition.format(
        slug="shoes-q3-bm25-vs-elser", day=day)


def test_an_export_of_an_evaluation_without_a_sluggable_name_uses_its_id(graded):
    graded.name = "☃ ☃"
    assert exports.filename(graded, "csv", on=date(2026, 1, 5)) == (
        f"searchtweak-{graded.pk}-judgments-20260105.csv")


def test_json_download_is_the_json_export_as_a_file_even_for_a_browser(personas, graded):
    client = client_for(personas.lead)
    inline = client.get(_url(graded, "?format=json"))
    download = client.get(_url(graded, "?format=json&download=1"),
                          HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")
    assert download.status_code == 200
    assert download["Content-Type"] == "application/json"
    assert download["Content-Disposition"].startswith("attachment; ")
    assert download["X-SearchTweak-Partial"] == "true"
    assert json.loads(download.content) == inline.json()
    assert len(inline.json()["judgments"]) == 12


def test_export_rejects_an_unknown_format(personas, graded):
    response = client_for(personas.owner).get(_url(graded, "?format=xml"))
    assert response.status_code == 400 and "format" in response.json()


def test_export_access_by_role(personas, graded):
    url = _url(graded, "?format=csv")
    assert client_for(personas.owner).get(url).status_code == 200
    assert client_for(personas.lead).get(url).status_code == 200
    assert client_for(personas.grader).get(url).status_code == 403
    assert client_for(personas.outsider).get(url).status_code == 404
    assert client_for(personas.owner).get(
        "/api/v1/evaluations/999999/judgments/").status_code == 404
    assert APIClient().get(url).status_code == 401
    assert client_for(personas.owner).put(url).status_code == 405


# --- import through the API ---


def _upload(client, evaluation, content: bytes, *, kind="csv", mapping: bytes | None = None,
            query=""):
    data = {"format": kind, "file": io.BytesIO(content)}
    data["file"].name = "judgments.csv" if kind == "csv" else "qrels.txt"
    if mapping is not None:
        data["mapping"] = io.BytesIO(mapping)
        data["mapping"].name = "mapping.tsv"
    return client.post(_url(evaluation, query), data, format="multipart")


@pytest.fixture
def pool_evaluation(personas):
    """An evaluation of the team with a pool metric: recall@2 on binary grades."""
    return build_evaluation(team=personas.team, scale="graded", strategy=1,
                            keywords={"laptop": ["d1", "d2"]},
                            metrics=[("recall", 2, {}), ("ndcg", 2, {"ideal": "pool"})])


def test_csv_import_stores_the_pool_and_recomputes_pool_metrics(
        personas, pool_evaluation, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        set_grades([personas.grader], [(slot(pool_evaluation, "laptop", 1), 3)])
    recall = pool_evaluation.metric_configs.get(code="recall")
    before = KeywordMetricValue.objects.get(metric=recall).value
    assert before == 1.0  # d1 is the only relevant document known
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload(client_for(personas.lead), pool_evaluation,
                           b"keyword,doc_id,grade\nLaptop ,d9,2\nlaptop,d8,0\n")
    assert response.status_code == 201, response.json()
    assert response.json() == {"imported": 2, "replaced": 0, "keywords": 1,
                               "dirty_keywords": 1, "duplicates": 0, "dropped": 0}
    rows = list(PoolJudgment.objects.values_list("team_id", "scale", "normalized_text",
                                                 "doc_id", "grade", "imported_by_id"))
    assert sorted(rows) == [
        (personas.team.pk, "graded", "laptop", "d8", 0, personas.lead.pk),
        (personas.team.pk, "graded", "laptop", "d9", 2, personas.lead.pk),
    ]
    # d9 is relevant too now (eager Celery recomputed after commit): 1 of 2 found.
    assert KeywordMetricValue.objects.get(metric=recall).value == 0.5


def test_importing_the_same_pairs_again_replaces_them(personas, pool_evaluation):
    client = client_for(personas.lead)
    _upload(client, pool_evaluation, b"laptop,d9,2\nlaptop,d9,3\n")
    response = _upload(client, pool_evaluation, b"laptop,d9,1\n")
    assert response.json()["replaced"] == 2
    assert list(PoolJudgment.objects.values_list("grade", flat=True)) == [1]


def test_trec_import_reads_the_mapping(personas, pool_evaluation):
    response = _upload(client_for(personas.owner), pool_evaluation,
                       b"# comment\n7 0 d5 3\n7 0 d6 0\n", kind="trec", mapping=b"7\tLaptop\n")
    assert response.status_code == 201
    assert sorted(PoolJudgment.objects.values_list("normalized_text", "doc_id", "grade")) == [
        ("laptop", "d5", 3), ("laptop", "d6", 0)]


@pytest.mark.parametrize(("content", "kind", "mapping", "expected"), [
    (b"laptop,d1,2\nlaptop,d2\n", "csv", None,
     "line 2: expected 3 columns (keyword,doc_id,grade), found 2"),
    (b"laptop,d1,2\nlaptop,d2,1\n\nphone,p1,1\n\nx,y,5\n", "csv", None,
     "line 6: grade 5 is outside the Graded scale 0..3"),
    (b"laptop,d1,two\n", "csv", None, "line 1: grade 'two' is not an integer"),
    (b",d1,2\n", "csv", None, "line 1: the keyword is empty"),
    (b"1 0 d1 2\n2 0 d2 1\n", "trec", b"1\tlaptop\n", "line 2: qid 2 is not in the mapping file"),
    (b"1 0 d1\n", "trec", b"1\tlaptop\n", "line 1: expected 4 columns (qid 0 docid grade), "
                                           "found 3"),
    (b"1 0 d1 2\n", "trec", None, "TREC qrels need the mapping file (qid<TAB>keyword lines): "
                                   "the topic ids are numbers (line 1: 1), which name queries "
                                   "by id, not by their text"),
    (b"laptop,d1,2\nlaptop,caf\xe9,1\nphone,\xe2\x82\xac,2\n", "csv", None,
     "line 2: not UTF-8 text (byte 0xe9 at column 11)"),
])
def test_malformed_files_give_line_numbered_errors_and_store_nothing(
        personas, pool_evaluation, content, kind, mapping, expected):
    client = client_for(personas.lead)
    response = _upload(client, pool_evaluation, content, kind=kind, mapping=mapping)
    assert response.status_code == 400
    assert expected in response.json()["file"]
    assert not PoolJudgment.objects.exists()
    preview = _upload(client, pool_evaluation, content, kind=kind, mapping=mapping,
                      query="?dry_run=true")
    assert preview.status_code == 200
    assert preview.json()["valid"] is False and expected in preview.json()["errors"]
    assert not PoolJudgment.objects.exists()


def test_ten_megabytes_of_garbage_answer_capped_line_errors(personas, pool_evaluation):
    garbage = bytes(range(256)) * (10 * 1024 * 1024 // 256)
    response = _upload(client_for(personas.lead), pool_evaluation, garbage)
    assert response.status_code == 400
    errors = response.json()["file"]
    assert len(errors) == imports.MAX_ERRORS + 1
    assert all(error.startswith("line ") for error in errors[:-1])
    assert errors[-1].startswith("… and ") and errors[-1].endswith(" more errors.")
    assert not PoolJudgment.objects.exists()


def test_dry_run_previews_a_valid_file_and_stores_nothing(personas, pool_evaluation):
    response = _upload(client_for(personas.lead), pool_evaluation,
                       b"keyword,doc_id,grade\nlaptop,d9,2\nphone,p1,0\n", query="?dry_run=1")
    assert response.status_code == 200
    assert response.json() == {
        "dry_run": True, "valid": True, "would_import": 2, "keywords": 2, "duplicates": 0,
        "duplicate_policy": "all", "repeated_pairs": 0, "repeated_lines": 0, "dropped": 0,
        "repeats": "Every keyword and document appears on one line only.",
        "errors": [], "format": "SearchTweak CSV",
        "format_reason": "header keyword,doc_id,grade (chosen on the form)",
        "grade_rule": "Ratings are whole grades, kept as they are on the Graded scale 0..3 "
                      "(one outside it is an error).",
        "grade_table": [], "skipped": 0, "skipped_note": "",
        "preview": [{"line": 2, "keyword": "laptop", "doc_id": "d9", "grade": 2, "grader": "",
                     "grader_kind": "", "unsure": False, "note": ""},
                    {"line": 3, "keyword": "phone", "doc_id": "p1", "grade": 0, "grader": "",
                     "grader_kind": "", "unsure": False, "note": ""}],
    }
    assert not PoolJudgment.objects.exists()


def test_import_access_by_role(personas, pool_evaluation):
    assert _upload(client_for(personas.owner), pool_evaluation, b"a,b,1\n").status_code == 201
    assert _upload(client_for(personas.grader), pool_evaluation, b"a,b,2\n").status_code == 403
    assert _upload(client_for(personas.outsider), pool_evaluation,
                   b"a,b,2\n").status_code == 404
    assert _upload(APIClient(), pool_evaluation, b"a,b,2\n").status_code == 401
    assert list(PoolJudgment.objects.values_list("grade", flat=True)) == [1]


def test_import_needs_a_file(personas, pool_evaluation):
    response = client_for(personas.lead).post(_url(pool_evaluation), {"format": "csv"},
                                              format="multipart")
    assert response.status_code == 400 and "file" in response.json()


# --- parsing ---


def test_csv_parser_allows_quotes_header_and_a_grader_column():
    result = imports.parse_csv(
        b'\xef\xbb\xbfkeyword,doc_id,grade,grader\r\n"red, shoes",d1,3,ann\r\n', scale=GRADED)
    assert result.ok
    assert [(j.line, j.text, j.doc_id, j.grade) for j in result.judgments] == [
        (2, "red, shoes", "d1", 3)]


def test_mapping_errors_name_the_mapping_line():
    result = trec.parse_trec(b"1 0 d 1\n", mapping=b"1\tlaptop\n2\n", scale=GRADED)
    assert result.errors == ["mapping line 2: expected `qid<TAB>keyword`"]


# --- formula injection ---

FORMULAS = {'=HYPERLINK("http://x.test","a")': ["=d1"], "+cmd|' /C calc'!A0": ["@d2"],
            "@sum(1)": ["\td3"], "-2+3": ["-1", "-d5"], "plain": ["4.5"]}


def test_csv_exports_neutralise_formulas_and_keep_numbers(personas):
    evaluation = build_evaluation(team=personas.team, scale="graded", strategy=1,
                                  keywords=FORMULAS, metrics=[("precision", 2, {})])
    set_grades([personas.grader], [(slot(evaluation, text, position), 2)
                                   for text, docs in FORMULAS.items()
                                   for position in range(1, len(docs) + 1)])
    FeedbackSlot.objects.filter(evaluation=evaluation).update(reason="=1+1")
    assert exports.judgments_csv(evaluation).split("\n") == [
        "keyword,doc_id,grade",
        '"\'=HYPERLINK(""http://x.test"",""a"")",\'=d1,2',
        "'+cmd|' /C calc'!A0,'@d2,2",
        "'@sum(1),'\td3,2",
        "'-2+3,-1,2", "'-2+3,'-d5,2",
        "plain,4.5,2", ""]
    per_grader = exports.judgments_csv_per_grader(evaluation).split("\n")
    assert per_grader[1].startswith(
        '"\'=HYPERLINK(""http://x.test"",""a"")",\'=d1,2,grader,person,\'=1+1,false,,1,')
    # Everything but CSV keeps the text as typed.
    body = client_for(personas.owner).get(_url(evaluation, "?format=json")).json()
    assert [j["keyword"] for j in body["judgments"]][:2] == [
        '=HYPERLINK("http://x.test","a")', "+cmd|' /C calc'!A0"]
    assert body["judgments"][0]["doc_id"] == "=d1"
    assert exports.trec_mapping(evaluation).splitlines()[0] == (
        '1\t=HYPERLINK("http://x.test","a")')


def test_the_metric_table_csv_neutralises_formulas(personas):
    evaluation = build_evaluation(team=personas.team, scale="graded", strategy=1,
                                  keywords={"=1+1": ["d1"], "-x": ["d2"]},
                                  metrics=[("precision", 1, {})])
    response = client_for(personas.owner).get(
        f"/api/v1/evaluations/{evaluation.pk}/metric-table/", HTTP_ACCEPT="text/csv")
    assert response.content.decode().splitlines() == ["keyword,precision@1", "'=1+1,", "'-x,"]


def test_an_exported_csv_imports_back_as_typed(personas, pool_evaluation):
    evaluation = build_evaluation(team=personas.team, scale="graded", strategy=1,
                                  keywords=FORMULAS, metrics=[("precision", 2, {})])
    set_grades([personas.grader], [(slot(evaluation, text, position), 3)
                                   for text, docs in FORMULAS.items()
                                   for position in range(1, len(docs) + 1)])
    response = _upload(client_for(personas.lead), pool_evaluation,
                       exports.judgments_csv(evaluation).encode())
    assert response.status_code == 201, response.json()
    assert sorted(PoolJudgment.objects.values_list("text", "doc_id", "grade")) == sorted(
        (text, doc.strip(), 3) for text, docs in FORMULAS.items() for doc in docs)


@pytest.mark.parametrize(("typed", "written"), [
    ("=1+1", "'=1+1"), ("+1+1", "'+1+1"), ("-1+1", "'-1+1"), ("@A1", "'@A1"),
    ("\tx", "'\tx"), ("\rx", "'\rx"), ("-0.5", "-0.5"), ("+3", "+3"), ("1e-3", "1e-3"),
    ("a=b", "a=b"), ("'=x", "''=x"), ("'x", "'x"), ("", ""), (2, 2), (-1.5, -1.5), (None, None)])
def test_a_cell_is_protected_only_where_a_spreadsheet_would_run_it(typed, written):
    assert csv_cell(typed) == written
    if isinstance(typed, str):
        assert csv_cell_read(csv_cell(typed)) == typed


# --- limits: repeated lines and the file's size ---


def test_a_qrels_file_of_one_repeated_line_stores_one_judgment(personas, pool_evaluation):
    qrels = b"1 0 d1 2\n" * 20_000 + b"1 0 d2 0\n"
    response = _upload(client_for(personas.lead), pool_evaluation, qrels, kind="trec",
                       mapping=b"1\tlaptop\n")
    assert response.status_code == 201, response.json()
    assert response.json() == {"imported": 2, "replaced": 0, "keywords": 1,
                               "dirty_keywords": 1, "duplicates": 19_999, "dropped": 0}
    assert sorted(PoolJudgment.objects.values_list("doc_id", "grade")) == [("d1", 2), ("d2", 0)]


def test_a_pair_judged_twice_with_different_grades_names_both_lines(personas, pool_evaluation):
    client = client_for(personas.lead)
    response = _upload(client, pool_evaluation, b"1 0 d1 2\n1 0 d2 1\n1 0 d1 3\n",
                       kind="trec", mapping=b"1\tlaptop\n")
    assert response.status_code == 400
    assert response.json() == {"file": [
        "line 3: qid 1 docid d1 was judged 2 on line 1; one judgment each"]}
    # Per grader in a CSV: the same grader twice is a repeat; other graders are grades.
    response = _upload(client, pool_evaluation, b"keyword,doc_id,grade,grader\n"
                       b"laptop,d1,3,ann\nLaptop,d1,3,ann\nlaptop,d1,1,bob\nlaptop,d1,2\n"
                       b"laptop,d1,2\n", query="?dry_run=true")
    assert (response.json()["would_import"], response.json()["duplicates"]) == (4, 1)
    response = _upload(client, pool_evaluation,
                       b"laptop,d1,3,ann\nlaptop,d1,2,ann\n", query="?dry_run=true")
    assert response.json()["errors"] == [
        "line 2: 'laptop' 'd1' by 'ann' was judged 3 on line 1; one judgment each"]
    assert not PoolJudgment.objects.exists()


def test_a_file_past_the_judgment_cap_is_refused_whole(personas, pool_evaluation, settings):
    rows = b"".join(b"laptop,d%d,1\n" % n for n in range(imports.MAX_JUDGMENTS + 5))
    response = _upload(client_for(personas.lead), pool_evaluation, rows)
    assert response.status_code == 400
    assert response.json() == {"file": [
        "the file holds more than 100,000 judgments; split it into smaller files"]}
    assert not PoolJudgment.objects.exists()
