"""How a result's grading slots read where a table lists them (the dashboard's keyword
table, a comparison's keyword page): one mark a slot, its grade or "·", "?" after a grade
the grader was unsure of, the grader's name on hover.

A tag, not template markup: a keyword table page shows 50 keywords x 10 results x 3 slots,
and the markup's dozen lookups a slot were most of the page's rendering."""

from collections.abc import Iterable

from django import template
from django.utils.html import format_html_join

register = template.Library()


@register.simple_tag
def slot_marks(slots: Iterable, show_unsure: bool = True) -> str:
    """`slots`: objects with grade, unsure and username
    (metrics.reports.keyword_snapshots.SlotView)."""
    return format_html_join("", '<span class="slot{}" title="{}">{}{}</span>', (
        (" empty" if slot.grade is None else "", slot.username or "unassigned",
         "·" if slot.grade is None else slot.grade,
         "?" if show_unsure and slot.unsure else "")
        for slot in slots))
