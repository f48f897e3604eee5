"""Bounded integers: the one field every form and API body reads an integer with.

A number a person or a client types is bounded before any code computes with it or a
database stores it: a value beyond its bounds is a form error or a 400 naming the field,
never an OverflowError (SQLite, datetime arithmetic) or a DataError (PostgreSQL's
`integer` column holds at most INT_MAX). The default bounds are those of the widest
integer column (0..INT_MAX); a field with a narrower rule names its own, and the service
behind it still enforces the rule across fields.
"""

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

# PostgreSQL `integer` (and `serial`): every integer column but the bigint ids is one.
INT_MAX = 2**31 - 1
# A bigint id: rows are numbered within it; a larger number names no row.
ID_MAX = 2**63 - 1


def api_integer(*, min_value: int = 0, max_value: int = INT_MAX, **kwargs: Any
                ) -> serializers.IntegerField:
    """A DRF integer field bounded by default to 0..INT_MAX (its OpenAPI schema says so)."""
    return serializers.IntegerField(min_value=min_value, max_value=max_value, **kwargs)


def api_id(**kwargs: Any) -> serializers.IntegerField:
    """A row id in a body: 1..ID_MAX, so a lookup never overflows."""
    return api_integer(min_value=1, max_value=ID_MAX, **kwargs)


def form_integer(*, min_value: int = 0, max_value: int = INT_MAX, **kwargs: Any
                 ) -> forms.IntegerField:
    """A form's integer field bounded by default to 0..INT_MAX."""
    return forms.IntegerField(min_value=min_value, max_value=max_value, **kwargs)


def bounded(value: Any, *, field: str, min_value: int = 0, max_value: int = INT_MAX,
            what: str = "") -> int:
    """`value` as an int within min_value..max_value, or a ValidationError on `field`
    that says the bounds. For integers read out of text (`ndcg@10`, a CSV cell) and
    JSON values no serializer field describes. A bool is not an integer here."""
    label = what or field
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            if isinstance(value, bool) or not isinstance(value, str):
                raise ValueError
            value = int(value.strip(), 10)
        except ValueError:
            raise ValidationError({field: f"{label} must be a whole number."}) from None
    if not min_value <= value <= max_value:
        # str() of an integer past 4,300 digits raises: only a short one is repeated.
        shown = str(value) if abs(value) < 10**20 else "more than 20 digits"
        raise ValidationError({field: f"{label} must be between {min_value} and "
                                      f"{max_value} (got {shown})."})
    return value


@extend_schema_field({"type": "integer", "format": "int64", "minimum": 1, "maximum": ID_MAX})
class BoundedPrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField):
    """A row named by its id in a body: an id beyond ID_MAX (or below 1) names no row, and
    is said as DRF says any id that does not exist, on the field."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, int) and not isinstance(data, bool) and not 1 <= data <= ID_MAX:
            self.fail("does_not_exist", pk_value=data)
        return super().to_internal_value(data)
