"""The slot marks of the keyword table and of a comparison's keyword page
(metrics.templatetags.slot_marks)."""

from django.template import Context, Template

from metrics.reports.keyword_snapshots import SlotView
from metrics.templatetags.slot_marks import slot_marks

SLOTS = [SlotView(0, 2, True, "ann"), SlotView(1, None, False, None),
         SlotView(2, 0, False, '<b>"x"</b>')]


def test_each_slot_shows_its_grade_its_grader_and_a_doubt():
    assert slot_marks(SLOTS) == (
        '<span class="slot" title="ann">2?</span>'
        '<span class="slot empty" title="unassigned">·</span>'
        '<span class="slot" title="&lt;b&gt;&quot;x&quot;&lt;/b&gt;">0</span>')


def test_a_page_without_doubts_leaves_the_question_mark_out():
    rendered = Template("{% load slot_marks %}{% slot_marks slots show_unsure=False %}").render(
        Context({"slots": SLOTS}))
    assert rendered.startswith('<span class="slot" title="ann">2</span>')
    assert "?" not in rendered
