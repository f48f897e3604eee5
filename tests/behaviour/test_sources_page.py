"""The behaviour sources page: every member reads a team's sources; a lead imports a CSV
or a UBI log through the browser (checked whole first, a bad line named, nothing stored
then) or opens a collector; a file over the upload limit is refused unread."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from audit.models import AuditEvent
from behaviour.models import BehaviourCount, BehaviourKeywordDay, BehaviourSource
from searchtweak.models import Role
from tests.behaviour.test_imports import EVENTS, QUERIES
from tests.searchtweak.factories import member

pytestmark = pytest.mark.django_db

PAGE, IMPORT, COLLECTOR = ("/behaviour/sources/", "/behaviour/sources/import/",
                           "/behaviour/sources/collector/")
CSV = (b"keyword,doc_id,position,impressions,clicks,dwell_seconds\n"
       b"red shoes,A,1,10,4,20\n"
       b"red shoes,B,2,10,1,\n"
       b"Red Shoes,A,1,5,1,40\n")


def _upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/csv")


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_a_lead_imports_a_csv_and_the_list_shows_it(client, personas):
    client.force_login(personas.lead)
    response = client.post(IMPORT, {"name": "Q3 counts", "kind": "csv",
                                    "file": _upload("counts.csv", CSV)})
    assert response.status_code == 302 and response["Location"] == PAGE
    source = BehaviourSource.objects.get()
    # "Red Shoes" is the same keyword as "red shoes": A at 1 is 10 + 5 shown, 4 + 1
    # clicked; dwell 20 s for each of 4 clicks and 40 s for 1 is 120 s over 5 clicks.
    assert (source.team, source.kind, source.created_by, source.event_count) == (
        personas.team, "csv", personas.lead, 3)
    assert sorted((c.keyword, c.doc_id, c.position, c.impressions, c.clicks,
                   c.dwell_seconds_sum, c.dwell_count)
                  for c in BehaviourCount.objects.filter(source=source)) == [
        ("red shoes", "A", 1, 15, 5, 120.0, 5), ("red shoes", "B", 2, 10, 1, 0.0, 0)]
    assert BehaviourKeywordDay.objects.filter(source=source, whole=True).count() == 1
    page = client.get(PAGE)
    row = re.search(rf'<tr data-testid="source-{source.pk}">(.*?)</tr>',
                    page.content.decode(), re.S).group(1)
    assert page.status_code == 200
    assert _text(row).startswith("Q3 counts CSV of per-position counts no days (a CSV) 0 3")


def test_a_bad_line_is_named_and_nothing_is_stored(client, personas):
    client.force_login(personas.lead)
    audits = AuditEvent.objects.count()
    bad = CSV + b"boots,C,zero,3,1,\n"
    response = client.post(IMPORT, {"name": "Broken", "kind": "csv",
                                    "file": _upload("counts.csv", bad)})
    assert response.status_code == 400
    assert "line 5" in response.content.decode()
    assert (BehaviourSource.objects.count(), BehaviourCount.objects.count(),
            AuditEvent.objects.count()) == (0, 0, audits)


def test_a_lead_imports_a_ubi_log_from_its_two_files(client, personas):
    client.force_login(personas.lead)
    response = client.post(IMPORT, {
        "name": "November", "kind": "ubi",
        "queries": _upload("queries.ndjson", b"".join(QUERIES)),
        "events": _upload("events.ndjson", b"".join(EVENTS))})
    assert response.status_code == 302
    source = BehaviourSource.objects.get()
    # Three searches; seven event lines, every one read (tests/behaviour/test_imports.py
    # sums the same log).
    assert (source.kind, source.search_count, source.event_count) == ("ubi", 3, 7)
    assert str(source.window_start_at.date()) == "2026-11-01"
    assert str(source.window_end_at.date()) == "2026-11-02"


def test_each_file_the_kind_needs_is_asked_for(client, personas):
    client.force_login(personas.lead)
    response = client.post(IMPORT, {"name": "November", "kind": "ubi",
                                    "queries": _upload("q.ndjson", b"".join(QUERIES))})
    assert response.status_code == 400
    assert response.context["import_form"].errors == {"events": ["Choose the file."]}
    assert BehaviourSource.objects.count() == 0


def test_a_file_over_the_limit_is_refused_unread(client, personas, settings):
    settings.BEHAVIOUR_UPLOAD_MAX_BYTES = len(CSV) - 1
    client.force_login(personas.lead)
    response = client.post(IMPORT, {"name": "Big", "kind": "csv",
                                    "file": _upload("counts.csv", CSV)})
    assert response.status_code == 400
    assert response.context["import_form"].errors["file"] == [
        f"counts.csv is {len(CSV)} bytes; a page upload may be at most {len(CSV) - 1} bytes "
        "(BEHAVIOUR_UPLOAD_MAX_BYTES). Nothing was read from it: import larger logs with "
        "manage.py import_behaviour."]
    assert BehaviourSource.objects.count() == 0
    settings.BEHAVIOUR_UPLOAD_MAX_BYTES = len(CSV)
    assert client.post(IMPORT, {"name": "Big", "kind": "csv",
                                "file": _upload("counts.csv", CSV)}).status_code == 302


def test_a_lead_opens_a_collector_and_reads_where_it_posts(client, personas):
    client.force_login(personas.lead)
    response = client.post(COLLECTOR, {"collector-name": "Shop front"})
    assert response.status_code == 302
    source = BehaviourSource.objects.get()
    assert (source.name, source.kind) == ("Shop front", "collector")
    html = client.get(PAGE).content.decode()
    assert f"/api/v1/behaviour-sources/{source.pk}/events/" in html
    blank = client.post(COLLECTOR, {"collector-name": "   "})
    assert blank.status_code == 400 and BehaviourSource.objects.count() == 1


def test_a_grader_and_a_viewer_read_the_list_and_change_nothing(client, personas):
    viewer = member(personas.team, Role.VIEWER, "viewer")
    for user in (personas.grader, viewer):
        client.force_login(user)
        page = client.get(PAGE)
        assert page.status_code == 200 and 'data-testid="import-form"' not in \
            page.content.decode()
        assert client.post(IMPORT, {"name": "x", "kind": "csv",
                                    "file": _upload("c.csv", CSV)}).status_code == 403
        assert client.post(COLLECTOR, {"collector-name": "x"}).status_code == 403
    assert BehaviourSource.objects.count() == 0
