"""How a value's bounds under missing grades read on every page: "(0.64 to 0.83)" after it,
nothing once they close, and a label when they are the wider, sound kind (docs/METRICS.md)."""

from django import template
from django.template.defaultfilters import floatformat
from django.utils.html import format_html

register = template.Library()
_DASH = "\u2013"  # an en dash between the two ends


@register.simple_tag
def bounds(lower: float | None, upper: float | None, exact: bool = True,
           digits: int = 3) -> str:
    """The range where the value can still go, or "" when every slot is graded (or there
    are no bounds yet)."""
    if lower is None or upper is None or lower == upper:
        return ""
    low, high = floatformat(lower, digits), floatformat(upper, digits)
    if exact:
        return format_html(
            '<span class="bounds" data-testid="bounds" title="Where the value can still go '
            'once every ungraded result is graded">({}{}{})</span>', low, _DASH, high)
    return format_html(
        '<span class="bounds wider" data-testid="bounds" title="Exact bounds would cost too '
        'much to compute here: these contain them">({}{}{} or narrower)</span>',
        low, _DASH, high)
