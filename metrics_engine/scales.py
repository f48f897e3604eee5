"""Grade scales: the three built-ins and admin-defined integer ranges lo..hi."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from metrics_engine.errors import MetricInputError

BINARY = "binary"
GRADED = "graded"
DETAIL = "detail"


def is_integer(value: Any) -> bool:
    """True for an int or an integral finite float; False for bool, str and the rest.

    ``true`` and ``"3"`` are not grades (docs/METRICS.md, Invalid input); ``3.0`` is the
    integer 3, as JSON Schema and the float grade arrays of the batch path both read it.
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


@dataclass(frozen=True)
class Scale:
    """An integer grade scale lo..hi (inclusive) with optional labels per grade.

    The one shape of a scale: the built-ins are binary 0..1, graded 0..3 and detail 1..10
    (docs/METRICS.md, Notation); admins define further ones (judgments.models.Scale stores
    them, judgments.scales.GradeScale adds colours and keys for the grading page).
    ``code`` identifies the scale in transformer keys (``"<src>-><dst>"``), so it must not
    contain ``"->"``. ``name`` is what people read ("Graded"); like the labels it plays no
    part in equality.
    """

    code: str
    lo: int
    hi: int
    labels: Mapping[int, str] = field(default_factory=dict, compare=False, hash=False)
    name: str = field(default="", compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.code or "->" in self.code:
            raise MetricInputError("scale", f"invalid scale code {self.code!r}")
        for name, bound in (("lo", self.lo), ("hi", self.hi)):
            if not is_integer(bound):
                raise MetricInputError(f"scale.{name}", f"{bound!r} is not an integer")
        if self.lo > self.hi:
            raise MetricInputError("scale", f"lo {self.lo} is greater than hi {self.hi}")

    @property
    def grades(self) -> range:
        """Every grade of the scale in ascending order."""
        return range(self.lo, self.hi + 1)

    def contains(self, grade: int) -> bool:
        """Whether ``grade`` lies within lo..hi (an integer is assumed)."""
        return self.lo <= grade <= self.hi

    @property
    def is_builtin(self) -> bool:
        return SCALES.get(self.code) == self

    def describe(self) -> str:
        return f"the {self.code} scale {self.lo}..{self.hi}"


SCALES: dict[str, Scale] = {
    BINARY: Scale(BINARY, 0, 1, {0: "irrelevant", 1: "relevant"}, "Binary"),
    GRADED: Scale(GRADED, 0, 3, {0: "poor", 1: "fair", 2: "good", 3: "perfect"}, "Graded"),
    DETAIL: Scale(DETAIL, 1, 10, name="Detail"),
}


def resolve_scale(scale: str | Scale | Mapping[str, Any], field_name: str = "scale") -> Scale:
    """Return the Scale for a built-in code, a Scale, or a ``{"code", "lo", "hi"}`` mapping."""
    if isinstance(scale, Scale):
        return scale
    if isinstance(scale, str):
        try:
            return SCALES[scale]
        except KeyError:
            known = ", ".join(SCALES)
            problem = f"unknown scale {scale!r} (known: {known})"
            raise MetricInputError(field_name, problem) from None
    if isinstance(scale, Mapping):
        missing = [key for key in ("code", "lo", "hi") if key not in scale]
        if missing:
            raise MetricInputError(field_name, f"a custom scale needs {', '.join(missing)}")
        if not isinstance(scale["code"], str):
            raise MetricInputError(f"{field_name}.code", "must be a string")
        if scale["code"] in SCALES:
            builtin = SCALES[scale["code"]]
            if (scale["lo"], scale["hi"]) != (builtin.lo, builtin.hi):
                raise MetricInputError(
                    field_name, f"{scale['code']!r} is a built-in scale {builtin.lo}..{builtin.hi}"
                )
            return builtin
        for name in ("lo", "hi"):
            if not is_integer(scale[name]):
                raise MetricInputError(f"{field_name}.{name}", f"{scale[name]!r} is not an integer")
        return Scale(scale["code"], int(scale["lo"]), int(scale["hi"]))
    raise MetricInputError(field_name, f"{scale!r} is not a scale")
