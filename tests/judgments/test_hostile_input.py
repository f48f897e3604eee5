"""Hostile input: random bytes as judgment imports, wrong types as grades.

Every answer is a success or a 400 (a form error on pages) whose message names the problem
(a line number for line-based files); never a 500; and a refused request writes nothing.
"""

import json
import re

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.html import escape
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from evaluations.models import Keyword
from judgments.formats import recognise
from judgments.models import FeedbackSlot, PoolJudgment
from judgments.scales import builtin_scale
from tests.judgments.builders import evaluation_with_slots
from tests.property_depth import examples

pytestmark = pytest.mark.django_db

# Fixtures are built once per test, not per example: each example restores what it checks.
HOSTILE = settings(max_examples=examples(40), deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow])

VALID_CSV = b"keyword,doc_id,grade\nlaptop,d1,3\nred shoes,d2,0\n\"a, b\",d3,2\n"
VALID_QRELS = b"1 0 d1 3\n2 0 d2 0\n"
VALID_MAPPING = b"1\tlaptop\n2\tred shoes\n"

# Other tools' files, recognised ("auto"): hostile versions of each.
VALID_TOOL_FILES = [
    b"query,docid,rating\nlaptop,d1,3\nrocky,,\n",
    b"3 qid:1 # d1 star wars\n0 qid:1 # d2 star wars\n",
    b'{"queries": [{"placeholders": {"$query": "q"}, "relevant_documents": {"3": ["d1"]}}]}',
    b'{"judgmentRatings": [{"query": "q", "ratings": [{"docId": "d", "rating": "0.700"}]}]}',
    b"laptop 0 d1 2\nphone 0 p1 0\n",
]
# What a refused file may say: a numbered line, or a whole-file problem.
LINE_MESSAGE = re.compile(r"^(mapping )?line \d+: \S")
FILE_MESSAGES = re.compile(r"^(the (mapping )?file is larger than|TREC qrels need the mapping|"
                           r"… and \d+ more errors\.$|The submitted file is empty\.$)")


def _with_huge_line(prefix: bytes) -> bytes:
    return prefix + b"x" * 100_000 + b",d1,1\n"


def _encoded(text: str) -> st.SearchStrategy[bytes]:
    return st.sampled_from(["utf-8", "utf-16", "utf-16-le", "latin-1", "cp1252", "utf-32"]).map(
        lambda encoding: text.encode(encoding, errors="replace"))


def hostile_bytes(valid: bytes) -> st.SearchStrategy[bytes]:
    """Random binary and text, `valid` truncated, re-encoded, with a BOM, NULs, a huge line,
    or its first line followed by garbage."""
    header = valid.split(b"\n", 1)[0] + b"\n"
    return st.one_of(
        st.binary(max_size=600),
        st.text(max_size=300).map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.integers(0, len(valid)).map(lambda cut: valid[:cut]),
        _encoded(valid.decode()),
        st.binary(max_size=40).map(lambda tail: b"\xef\xbb\xbf" + valid + tail),
        st.integers(0, len(valid)).map(lambda at: valid[:at] + b"\x00" + valid[at:]),
        st.just(_with_huge_line(header)),
        st.binary(min_size=1, max_size=400).map(lambda junk: header + junk),
        st.lists(st.sampled_from([b"\r", b"\n", b"\r\n", b",", b'"', b"\t", b" ", b"#", b"9",
                                  b"\xff", b"\xc3", b"-1", b"1e9", b"x"]),
                 max_size=60).map(b"".join),
    )


def _assert_named(response, field: str = "file") -> None:
    assert response.status_code == 400, response.content[:500]
    messages = response.json()[field]
    assert messages and all(
        LINE_MESSAGE.match(message) or FILE_MESSAGES.match(message) for message in messages
    ), messages


def _pool_rows(team) -> list[tuple]:
    return list(PoolJudgment.objects.filter(team=team).order_by("pk").values_list(
        "pk", "normalized_text", "doc_id", "grade"))


@pytest.fixture
def api_import(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    client = APIClient()
    client.force_authenticate(personas.lead)
    url = f"/api/v1/evaluations/{evaluation.pk}/judgments/"

    def post(content: bytes, *, kind: str = "csv", mapping: bytes | None = None,
             dry_run: bool = False):
        data = {"format": kind, "file": SimpleUploadedFile("hostile.bin", content)}
        if mapping is not None:
            data["mapping"] = SimpleUploadedFile("mapping.tsv", mapping)
        return client.post(url + ("?dry_run=true" if dry_run else ""), data,
                           format="multipart")

    return post


def _check_import(post, team, content: bytes, **options) -> None:
    before = _pool_rows(team)
    response = post(content, **options)
    if response.status_code == 201:
        counts = response.json()
        assert counts["imported"] == len(_pool_rows(team)) - len(before) + counts["replaced"]
        return
    _assert_named(response, "mapping" if options.get("mapping") == b"" and content else "file")
    assert _pool_rows(team) == before, "a refused file wrote to the pool"


@HOSTILE
@given(content=hostile_bytes(VALID_CSV))
def test_api_csv_import_of_hostile_bytes_is_a_success_or_a_named_400(
        personas, api_import, content):
    _check_import(api_import, personas.team, content)


@HOSTILE
@given(content=hostile_bytes(VALID_QRELS), mapping=hostile_bytes(VALID_MAPPING))
def test_api_trec_import_of_hostile_qrels_and_mapping_is_a_success_or_a_named_400(
        personas, api_import, content, mapping):
    _check_import(api_import, personas.team, content, kind="trec", mapping=mapping)


@HOSTILE
@given(content=hostile_bytes(VALID_CSV))
def test_api_dry_run_of_hostile_bytes_stores_nothing_and_names_each_error(
        personas, api_import, content):
    before = _pool_rows(personas.team)
    response = api_import(content, dry_run=True)
    if not content:
        assert response.json() == {"file": ["The submitted file is empty."]}
        return
    assert response.status_code == 200
    body = response.json()
    assert body["valid"] == (not body["errors"])
    assert all(LINE_MESSAGE.match(m) or FILE_MESSAGES.match(m) for m in body["errors"])
    assert _pool_rows(personas.team) == before


def test_a_keyword_whose_casefold_outgrows_the_column_is_a_named_error(personas, api_import):
    # "ß" casefolds to "ss": 500 characters that normalize to 1,000 would not fit the
    # 500-character normalized_text column (a 500 on PostgreSQL).
    response = api_import(("ß" * 500 + ",d1,1\n").encode())
    _assert_named(response)
    assert response.json()["file"] == ["line 1: the keyword is longer than 500 characters"]
    response = api_import(b"1 0 d1 1\n", kind="trec", mapping=("1\t" + "ß" * 500).encode())
    assert response.json()["file"][0] == (
        "mapping line 1: the keyword is longer than 500 characters")
    assert not PoolJudgment.objects.exists()


def test_api_import_without_a_file_or_with_a_wrong_format_names_the_field(personas, api_import):
    evaluation_url_post = api_import
    response = evaluation_url_post(b"a,b,1\n", kind="xml")
    assert response.status_code == 400 and "format" in response.json()
    response = evaluation_url_post(b"1 0 d1 1\n", kind="trec")
    assert response.status_code == 400
    assert response.json()["file"] == [
        "TREC qrels need the mapping file (qid<TAB>keyword lines): the topic ids are numbers "
        "(line 1: 1), which name queries by id, not by their text"]
    assert not PoolJudgment.objects.exists()


@HOSTILE
@given(content=st.sampled_from([VALID_CSV, *VALID_TOOL_FILES]).flatmap(hostile_bytes),
       kind=st.sampled_from(recognise.KIND_CHOICES), action=st.sampled_from(["preview", "import"]))
@example(content=VALID_CSV, kind="csv", action="import")
def test_pool_import_page_with_hostile_bytes_answers_a_page_that_names_the_problem(
        client, personas, content, kind, action):
    client.force_login(personas.lead)
    before = _pool_rows(personas.team)
    response = client.post("/pool/import/", {
        "scale": "graded", "format": kind, "file": SimpleUploadedFile("hostile.csv", content),
        "mapping": SimpleUploadedFile("m.tsv", content), action: "1"})
    assert response.status_code in (200, 302, 400)
    if response.status_code == 302:
        assert action == "import"
        # Exactly the file's judgments were written, as its preview would have listed them.
        scale = builtin_scale("graded")
        parsed = recognise.parse_content(kind=kind, content=content, mapping=content,
                                         scale=scale)
        assert parsed.ok
        added = [row[1:] for row in _pool_rows(personas.team) if row not in before]
        assert sorted(added) == sorted(
            (Keyword.normalize(item.text), item.doc_id, item.grade) for item in parsed.judgments)
        notices = [str(message) for message in get_messages(response.wsgi_request)]
        assert notices[0].startswith(f"Imported {len(parsed.judgments)} judgments for "
                                     f"{len({text for text, _, _ in added})} keywords")
        PoolJudgment.objects.filter(team=personas.team).exclude(
            pk__in=[row[0] for row in before]).delete()
        return
    preview = response.context["preview"]
    if response.status_code == 400 and not content:
        assert response.context["form"].errors["file"] == ["The submitted file is empty."]
        assert _pool_rows(personas.team) == before
    elif response.status_code == 400:
        assert preview is not None and preview["errors"]
        assert all(LINE_MESSAGE.match(m) or FILE_MESSAGES.match(m) or TOOL_MESSAGE.match(m)
                   for m in preview["errors"])
        assert escape(preview["errors"][0]) in response.content.decode()
        assert _pool_rows(personas.team) == before
    else:
        assert action == "preview" and _pool_rows(personas.team) == before


# --- grades of wrong types ---


def _slot_state(evaluation) -> list[tuple]:
    return list(FeedbackSlot.objects.filter(evaluation=evaluation).order_by("pk").values_list(
        "pk", "user_id", "grade", "unsure", "note", "graded_at", "assigned_at"))


not_a_grade = st.one_of(
    st.text(max_size=20), st.floats().filter(lambda x: x != int(x) if x == x and abs(x) != float(
        "inf") else True),
    st.booleans(), st.none(), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.lists(st.integers(), max_size=3), st.integers(min_value=2**63),
    st.integers(max_value=-1), st.integers(min_value=4, max_value=2**40),
    st.integers(min_value=-(2**200), max_value=-(2**63)),
)
not_a_flag = st.one_of(st.integers(min_value=2), st.text(min_size=2, max_size=10).filter(
    lambda text: text.lower() not in {"true", "false", "yes", "no", "on", "off", "null"}),
    st.lists(st.booleans(), min_size=1, max_size=2), st.dictionaries(st.text(max_size=3),
                                                                     st.booleans(), min_size=1))
not_a_note = st.one_of(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                       st.lists(st.integers(), max_size=2), st.text(min_size=2001, max_size=2100))
# A body whose one wrong field is named in the 400.
wrong_bodies = st.one_of(
    st.builds(lambda grade: ("grade", {"grade": grade}), not_a_grade),
    st.just(("grade", {})),
    st.just(("grade", {"unsure": True, "note": "x"})),
    st.builds(lambda flag: ("unsure", {"grade": 1, "unsure": flag}), not_a_flag),
    st.builds(lambda note: ("note", {"grade": 1, "note": note}), not_a_note),
)
# JSON that is not an object, and text that is not JSON.
wrong_payloads = st.one_of(
    st.lists(st.integers(), min_size=1, max_size=3).map(json.dumps),
    st.sampled_from(["[]", "0", "1", "false", "true", '"grade"', "null", "3.5"]),
    st.sampled_from(['{"grade": 1', "{grade: 1}", "{'grade': 1}", "\x00", "\xff{}", "NaN",
                     '{"grade": NaN}', '{"grade": 1}}', "\ufeff{\"grade\": 1}"]),
    st.binary(min_size=1, max_size=50).map(lambda raw: raw.decode("latin-1")),
)


@pytest.fixture
def grading(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2, strategy=1)
    snapshot = evaluation.keywords.get().snapshots.order_by("position").first()
    client = APIClient()
    client.force_authenticate(personas.grader)
    return evaluation, snapshot, client


def _urls(evaluation, snapshot):
    return [f"/api/v1/snapshots/{snapshot.pk}/grade/",
            f"/api/v1/evaluations/{evaluation.pk}/next/"]


@HOSTILE
@given(wrong=wrong_bodies)
def test_grade_apis_answer_400_naming_the_wrong_field_and_change_no_slot(grading, wrong):
    evaluation, snapshot, client = grading
    field, body = wrong
    before = _slot_state(evaluation)
    for url in _urls(evaluation, snapshot):
        payload = {**body, "snapshot": snapshot.pk} if url.endswith("/next/") else body
        response = client.post(url, payload, format="json")
        assert response.status_code == 400, (url, payload, response.content[:300])
        assert field in response.json(), (url, payload, response.json())
        assert _slot_state(evaluation) == before


@HOSTILE
@given(snapshot_value=st.one_of(
    st.text(max_size=10).filter(lambda text: not text.strip().isdigit()), st.booleans(),
    st.floats(allow_nan=False).filter(lambda x: x != int(x) if abs(x) != float("inf") else True),
    st.integers(max_value=0), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.lists(st.integers(), max_size=2)))
def test_next_with_a_wrong_snapshot_answers_400_naming_it(grading, snapshot_value):
    evaluation, _snapshot, client = grading
    before = _slot_state(evaluation)
    response = client.post(f"/api/v1/evaluations/{evaluation.pk}/next/",
                           {"snapshot": snapshot_value, "grade": 1}, format="json")
    assert response.status_code == 400, response.content[:300]
    assert "snapshot" in response.json()
    assert _slot_state(evaluation) == before


@HOSTILE
@given(payload=wrong_payloads)
def test_grade_apis_refuse_bodies_that_are_not_a_json_object(grading, payload):
    evaluation, snapshot, client = grading
    before = _slot_state(evaluation)
    for url in _urls(evaluation, snapshot):
        response = client.post(url, payload.encode("utf-8", "surrogatepass"),
                               content_type="application/json")
        assert response.status_code == 400, (url, payload, response.content[:300])
        body = response.json()
        assert set(body) & {"detail", "non_field_errors", "grade"}, body
        assert _slot_state(evaluation) == before


def test_unknown_snapshots_are_404_and_extra_fields_are_ignored(grading, personas):
    evaluation, snapshot, client = grading
    assert client.post("/api/v1/snapshots/999999/grade/", {"grade": 1},
                       format="json").status_code == 404
    assert client.post(f"/api/v1/evaluations/{evaluation.pk}/next/",
                       {"snapshot": 999999, "grade": 1}, format="json").status_code == 404
    response = client.post(f"/api/v1/snapshots/{snapshot.pk}/grade/",
                           {"grade": 2, "user": personas.lead.pk, "id": 1, "graded_at": None},
                           format="json")
    assert response.status_code == 200
    assert (response.json()["grade"], response.json()["user"]) == (2, "grader")


@HOSTILE
@given(grade=st.one_of(st.text(max_size=30), st.sampled_from(
    ["", " ", "1.5", "true", "null", "-1", "4", "9" * 5000, "٣", "1e3", "0x1", "\x00"])))
def test_the_lead_feedback_grade_form_refuses_wrong_grades_with_a_message(
        client, personas, grade):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, strategy=1)
    slot = FeedbackSlot.objects.get(evaluation=evaluation)
    client.force_login(personas.lead)
    before = _slot_state(evaluation)
    response = client.post(f"/feedback/slots/{slot.pk}/grade/", {"grade": grade}, follow=True)
    assert response.status_code == 200
    notices = [str(message) for message in response.context["messages"]]
    text = grade.strip()
    # Any decimal integer is read as one ("00", "-0", "٣" too): only its value is checked.
    if re.fullmatch(r"-?\d{1,9}", text) and 0 <= int(text) <= 3:
        assert FeedbackSlot.objects.get(pk=slot.pk).grade == int(text)
        return
    if not text or len(text) > 10 or "\x00" in text:
        expected = "Choose a grade."
    elif re.fullmatch(r"-?\d+", text):
        expected = f"{int(text)} is not a grade of the {builtin_scale('graded').describe()} scale."
    else:
        expected = f"{text!r} is not an integer grade."
    assert notices == [expected], notices
    assert _slot_state(evaluation) == before


@HOSTILE
@given(grade=st.one_of(st.text(max_size=30), st.sampled_from(
    ["", "1.5", "true", "-1", "4", "9" * 5000, "1e3", "0x1", "\x00"])),
    note=st.one_of(st.just(""), st.text(max_size=50), st.just("n" * 2001)))
@example(grade="4", note="")
@example(grade="2", note="n" * 2001)
@example(grade="two", note="a\x00b")
@example(grade="", note="n" * 2001)
def test_the_grading_page_refuses_wrong_grades_with_400_and_keeps_the_slot(
        client, grading, personas, grade, note):
    evaluation, _snapshot, api = grading
    slot_id = api.post(f"/api/v1/evaluations/{evaluation.pk}/next/").json()["id"]
    client.force_login(personas.grader)
    before = _slot_state(evaluation)
    response = client.post(f"/grade/slots/{slot_id}/", {"grade": grade, "note": note})
    text = grade.strip()
    if (re.fullmatch(r"-?\d{1,9}", text) and 0 <= int(text) <= 3 and len(note) <= 2000
            and "\x00" not in note):
        assert response.status_code == 302
        FeedbackSlot.objects.filter(pk=slot_id).update(grade=None, graded_at=None)
        return
    assert response.status_code == 400, response.content[:300]
    assert response.context["form_error"] == _grading_page_error(grade, note)
    assert escape(response.context["form_error"]) in response.content.decode()
    assert _slot_state(evaluation) == before


def _grading_page_error(grade: str, note: str) -> str:
    """What the grading page says to a refused grade and note: the form's shape first
    (a grade it cannot read hides any note problem), then the grade's value."""
    text, note_text = grade.strip(), note.strip()
    if not text or len(text) > 10 or "\x00" in text:
        return "Choose one of the grades."
    note_problems = (
        ([f"Note: Ensure this value has at most 2000 characters (it has {len(note_text)})."]
         if len(note_text) > 2000 else [])
        + (["Note: Null characters are not allowed."] if "\x00" in note_text else []))
    if note_problems:
        return " ".join(note_problems)
    if re.fullmatch(r"-?\d+", text):
        return f"{int(text)} is not a grade of the {builtin_scale('graded').describe()} scale."
    return f"{text!r} is not an integer grade."


def test_a_note_past_its_limit_is_named_on_the_grading_page(client, grading, personas):
    evaluation, _snapshot, api = grading
    slot_id = api.post(f"/api/v1/evaluations/{evaluation.pk}/next/").json()["id"]
    client.force_login(personas.grader)
    response = client.post(f"/grade/slots/{slot_id}/", {"grade": "1", "note": "n" * 2001})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Note: Ensure this value has at most 2000 characters (it has 2001)." in page
    assert "Choose one of the grades." not in page
    assert FeedbackSlot.objects.get(pk=slot_id).grade is None


# What a refused tool file may say: a line, a JSON item path, or a whole-file problem.
TOOL_MESSAGE = re.compile(
    r"^(line \d+(: | column \d+: not JSON)|queries\[\d+\]|judgmentRatings(\[|: )|"
    r"the format is not recognised: \S|not UTF-8 text|not JSON \(|expected an object with|"
    r"TREC qrels need the mapping|… and \d+ more errors\.$|The submitted file is empty\.$)")


@HOSTILE
@given(content=st.sampled_from(VALID_TOOL_FILES).flatmap(hostile_bytes))
# A carriage return inside the first line once stopped the recogniser's CSV read (a 500).
@example(content=b"\x00\r\x00")
def test_api_import_of_hostile_tool_files_is_a_success_or_a_400_naming_the_place(
        personas, api_import, content):
    before = _pool_rows(personas.team)
    response = api_import(content, kind="auto")
    if response.status_code == 201:
        counts = response.json()
        assert counts["imported"] == (len(_pool_rows(personas.team)) - len(before)
                                      + counts["replaced"])
        return
    assert response.status_code == 400, response.content[:500]
    messages = response.json()["file"]
    assert messages and all(TOOL_MESSAGE.match(message) for message in messages), messages
    assert _pool_rows(personas.team) == before, "a refused file wrote to the pool"
