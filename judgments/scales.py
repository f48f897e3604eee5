"""What a grade is for one team: the built-in scales of metrics_engine plus the team's own.

The evaluation stores only a scale code; scale_for_team turns it into the team's scale (a
metrics_engine Scale: code, bounds, labels) wrapped with colours and keyboard keys for the
grading pages, and answers evaluations' ScaleProvider questions.
"""

from dataclasses import dataclass

import metrics_engine as core
from judgments.models import Scale, Transformer

# Shown for the built-ins; admin-defined scales carry their own labels and colours.
_BUILTIN_COLORS = {
    "binary": {0: "#d92d20", 1: "#079455"},
    "graded": {0: "#d92d20", 1: "#f79009", 2: "#2e90fa", 3: "#079455"},
    "detail": {
        1: "#b42318", 2: "#d92d20", 3: "#f04438", 4: "#f79009", 5: "#fdb022",
        6: "#a6c33a", 7: "#66c61c", 8: "#2e90fa", 9: "#1570ef", 10: "#079455",
    },
}
# The detail scale's grades carry only numbers in metrics_engine (judges' prompts read those);
# people grading or reading a list see words, as on the other built-ins.
_BUILTIN_LABELS = {
    "detail": {
        1: "Useless", 2: "Very poor", 3: "Poor", 4: "Weak", 5: "Partial", 6: "Fair",
        7: "Good", 8: "Very good", 9: "Excellent", 10: "Perfect",
    },
}
# Keys are digits, so a scale may hold at most ten grades within 0..10 (0 means 10 when
# the scale has no grade 0, as on the detail scale).
MAX_GRADE = 10


@dataclass(frozen=True)
class Grade:
    value: int
    label: str
    color: str
    key: str


@dataclass(frozen=True)
class GradeScale:
    """A team's scale as the grading pages show it: the core Scale (code, bounds, labels,
    name; the one place they live) with each grade's colour and keyboard key."""

    scale: core.Scale
    grades: tuple[Grade, ...]
    builtin: bool

    @property
    def code(self) -> str:
        return self.scale.code

    @property
    def name(self) -> str:
        return self.scale.name

    @property
    def lo(self) -> int:
        return self.scale.lo

    @property
    def hi(self) -> int:
        return self.scale.hi

    def describe(self) -> str:
        return f"{self.name} ({self.lo}..{self.hi})"

    def contains(self, grade: int) -> bool:
        return self.scale.contains(grade)

    def label_of(self, grade: int | None) -> str:
        for item in self.grades:
            if item.value == grade:
                return item.label
        return ""

    def core_scale(self) -> core.Scale:
        return self.scale


def grade_key(value: int, lo: int) -> str:
    """The keyboard digit of a grade: the grade itself, and 0 for 10 when 0 is no grade."""
    if value == 10 and lo >= 1:
        return "0"
    return str(value)


def builtin_scale(code: str) -> GradeScale | None:
    scale = core.SCALES.get(code)
    if scale is None:
        return None
    colors = _BUILTIN_COLORS.get(code, {})
    labels = {**scale.labels, **_BUILTIN_LABELS.get(code, {})}
    grades = tuple(
        Grade(g, str(labels.get(g, g)).capitalize(), colors.get(g, "#5b6675"),
              grade_key(g, scale.lo))
        for g in scale.grades
    )
    return GradeScale(scale, grades, True)


def from_model(row: Scale) -> GradeScale:
    scale = core.Scale(row.code, row.lo, row.hi, name=row.name, labels={
        g: (row.labels.get(str(g)) or {}).get("label") or str(g) for g in range(row.lo, row.hi + 1)
    })
    grades = tuple(
        Grade(g, scale.labels[g], (row.labels.get(str(g)) or {}).get("color") or "#5b6675",
              grade_key(g, scale.lo))
        for g in scale.grades
    )
    return GradeScale(scale, grades, False)


def scale_for_team(*, team_id: int, code: str) -> GradeScale | None:
    """The scale `code` as seen by a team, or None when the team has no such scale."""
    found = builtin_scale(code)
    if found is not None:
        return found
    row = Scale.objects.filter(team_id=team_id, code=code).first()
    return from_model(row) if row else None


def scales_for_team(*, team_id: int) -> list[GradeScale]:
    builtins = [builtin_scale(code) for code in core.SCALES]
    return [s for s in builtins if s] + [
        from_model(row) for row in Scale.objects.filter(team_id=team_id)
    ]


def transformer_mappings(*, team_id: int) -> dict[str, dict[str, int]]:
    """The team's transformers as an evaluation stores them: {"src->dst": {"grade": grade}}."""
    return {
        f"{row.source}->{row.target}": {str(k): int(v) for k, v in row.mapping.items()}
        for row in Transformer.objects.filter(team_id=team_id)
    }


def default_mapping(source: GradeScale, target: GradeScale) -> dict[int, int] | None:
    if not (source.builtin and target.builtin):
        return None
    return core.default_transformer(source.code, target.code)


# --- the answers judgments gives to evaluations.hooks (registered in apps.ready) ---


def provider_choices(team) -> list[tuple[str, str]]:
    return [(s.code, s.describe()) for s in scales_for_team(team_id=team.pk)]


def provider_bounds(team, code: str) -> tuple[int, int] | None:
    scale = scale_for_team(team_id=team.pk, code=code)
    return (scale.lo, scale.hi) if scale else None


def provider_transformers(team) -> dict[str, dict[str, int]]:
    return transformer_mappings(team_id=team.pk)
