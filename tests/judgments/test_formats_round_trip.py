"""Round trips through other tools' formats: export → import → export gives the same bytes,
for each format, through the pure writers and parsers (any rows) and through the pool's
pages (export, import recognised, export again). That a hand-written file of each tool
gives the grades its documentation means is tests/judgments/test_formats.py."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import example, given, settings
from hypothesis import strategies as st

from judgments.formats import recognise, write
from judgments.models import PoolJudgment
from judgments.pool import pool_judgments_import
from judgments.scales import builtin_scale
from tests.metrics.builders import build_evaluation, set_grades, slot
from tests.property_depth import examples

GRADED = builtin_scale("graded")
# Cells a CSV quotes or a spreadsheet runs, JSON escapes, and the LTR line's own marks.
TRICKY = [("red, dress", "d,1", 3), ('say "hi"', "=HYPERLINK(1)", 0), ("café ß", "ü-7", 2),
          ("c# lang", "#x", 1), ("=cmd|' /C calc'!A0", "-1", 3), ("red, dress", "d,1", 1),
          ("qid:7", "'=x", 2), ("日本語 検索", "doc/9?a=b&c", 0)]


def _round(kind: str, rows: list[tuple[str, str, int]]) -> tuple[str, str]:
    first = "".join(write.foreign_stream(kind, iter(rows), title="Pool (graded)"))
    parsed = recognise.parse_content(kind="auto", content=first.encode(), mapping=None,
                                     scale=GRADED)
    assert parsed.ok, parsed.errors
    assert parsed.format_kind == kind  # our own export is recognised as what it is
    again = [(item.text, item.doc_id, item.grade) for item in parsed.judgments]
    return first, "".join(write.foreign_stream(kind, iter(again), title="Pool (graded)"))


@pytest.mark.parametrize("kind", write.KINDS)
def test_tricky_rows_come_back_exactly(kind):
    first, second = _round(kind, TRICKY)
    assert second == first


# Not NUL, which every import refuses (no database stores it), nor a lone CR, which the CSV
# writer (searchtweak.csv_cells, "\n" line ends) leaves unquoted.
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00")
               | st.sampled_from(",\"'#=:@ "), min_size=1, max_size=12).map(str.strip).filter(bool)


@settings(max_examples=examples(200), deadline=None)
@given(kind=st.sampled_from(write.KINDS),
       rows=st.lists(st.tuples(TEXT, TEXT, st.integers(0, 3)), min_size=1, max_size=8))
@example(kind="ltr", rows=[("a  b", "x y", 1)])
def test_any_rows_export_import_export_to_the_same_bytes(kind, rows):
    first, second = _round(kind, rows)
    assert second == first


class _Row:
    def __init__(self, text: str, doc_id: str, grade: int):
        self.text, self.doc_id, self.grade = text, doc_id, grade
        self.grader = self.grader_kind = self.note = self.reason = ""
        self.unsure, self.position, self.graded_at = False, None, None


@pytest.mark.django_db
@pytest.mark.parametrize("kind", write.KINDS)
def test_the_pool_export_imports_back_and_exports_the_same_bytes(client, personas, kind):
    pool_judgments_import(team=personas.team, scale="graded", source="seed", user=personas.lead,
                          judgments=[_Row(*row) for row in TRICKY])
    client.force_login(personas.lead)
    exported = client.get("/pool/export/", {"scale": "graded", "format": kind}).content
    PoolJudgment.objects.all().delete()
    response = client.post("/pool/import/", {
        "scale": "graded", "format": "auto", "duplicates": "all", "import": "1",
        "file": SimpleUploadedFile("from-pool", exported)})
    assert response.status_code == 302
    assert PoolJudgment.objects.count() == len(TRICKY)
    assert set(PoolJudgment.objects.values_list("source", flat=True)) == {f"{kind}: from-pool"}
    again = client.get("/pool/export/", {"scale": "graded", "format": kind}).content
    assert again == exported


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["quepid_csv", "ltr"])
def test_an_evaluation_export_imports_into_the_pool_which_exports_the_same_bytes(
        client, personas, kind):
    evaluation = build_evaluation(team=personas.team, keywords={"Laptop": ["d1", "d2"],
                                                                "red, dress": ["r1"]},
                                  metrics=[("ndcg", 2, {})])
    set_grades([personas.owner, personas.lead], [
        (slot(evaluation, "laptop", 1, 0), 3), (slot(evaluation, "laptop", 2, 0), 0),
        (slot(evaluation, "red, dress", 1, 0), 2)])
    client.force_login(personas.lead)
    exported = b"".join(client.get(f"/api/v1/evaluations/{evaluation.pk}/judgments/",
                                   {"format": kind}).streaming_content)
    response = client.post("/pool/import/", {
        "scale": "graded", "format": "auto", "import": "1",
        "file": SimpleUploadedFile("from-evaluation", exported)})
    assert response.status_code == 302
    assert client.get("/pool/export/", {"scale": "graded", "format": kind}).content == exported
