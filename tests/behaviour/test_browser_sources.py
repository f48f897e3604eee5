"""The behaviour sources page in a real Chromium: a lead picks the kind of log and sees
only its file fields, imports a CSV through the file input, reads a bad line's number, and
the good file then lists as a source, on a phone as on a laptop."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from behaviour.models import BehaviourCount, BehaviourSource
from tests.searchtweak.factories import TeamFactory, member
from tests.test_first_hour import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOOD = ("keyword,doc_id,position,impressions,clicks,dwell_seconds\n"
        "red shoes,A,1,10,4,20\n"
        "red shoes,B,2,10,1,\n")
BAD = GOOD + "boots,C,zero,3,1,\n"


def test_a_lead_imports_a_csv_through_the_page(page, live_server, tmp_path: Path):
    from searchtweak.models import Role

    team = TeamFactory(name="Shop")
    lead = member(team, Role.LEAD, "shoplead")
    lead.set_password("demo")  # what tests.test_first_hour.log_in types
    lead.save()
    bad, good = tmp_path / "bad.csv", tmp_path / "good.csv"
    bad.write_text(BAD)
    good.write_text(GOOD)
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server, "shoplead")
    page.goto(f"{live_server.url}/behaviour/sources/")
    expect(page.get_by_test_id("no-sources")).to_be_visible()
    form = page.get_by_test_id("import-form")
    # The kind picked shows its own files only.
    expect(form.get_by_test_id("csv-fields")).to_be_visible()
    expect(form.get_by_test_id("ubi-fields")).to_be_hidden()
    form.get_by_label("UBI log (queries and events)").check()
    expect(form.get_by_test_id("ubi-fields")).to_be_visible()
    expect(form.get_by_test_id("csv-fields")).to_be_hidden()
    form.get_by_label("CSV of counts").check()

    form.get_by_label("Name:").fill("Counts")
    form.get_by_label("CSV file:").set_input_files(str(bad))
    form.get_by_role("button", name="Import").click()
    expect(page.get_by_test_id("import-form")).to_contain_text(
        "CSV line 4, position: 'zero' is not a whole number")
    assert BehaviourSource.objects.count() == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    form = page.get_by_test_id("import-form")
    form.get_by_label("CSV file:").set_input_files(str(good))
    form.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status").or_(page.locator(".messages"))).to_contain_text(
        "Behaviour source Counts imported: 2 lines read.")
    source = BehaviourSource.objects.get()
    expect(page.get_by_test_id(f"source-{source.pk}")).to_contain_text("CSV of per-position")
    assert (source.team, BehaviourCount.objects.filter(source=source).count()) == (team, 2)
