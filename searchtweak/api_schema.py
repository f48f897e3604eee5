"""How the OpenAPI schema names things and documents errors, for every app's API.

Each API view nests its own `InputSerializer` / `OutputSerializer` (STYLE.md), so the
class name alone is not unique: components are named after the qualified name
(`EvaluationCompareApi.OutputSerializer` → `EvaluationCompareOutput`). Every operation
documents the error shapes the API answers with (docs/ARCHITECTURE.md): 400 `ValidationError` (field
→ messages), and `Error` (`{"detail"}`) for 401, 403 and 404.
"""

import re

from drf_spectacular import openapi

ERROR_SCHEMAS = {
    "ValidationError": {
        "type": "object",
        "description": (
            "A 400 answer: each invalid field (or `non_field_errors`) with its messages; a "
            "body that is not valid JSON answers `{\"detail\": \"...\"}`."
        ),
        "additionalProperties": {
            "anyOf": [
                {"type": "array", "items": {}},
                {"type": "string"},
                {"type": "object"},
            ]
        },
        "example": {"grade": ["5 is not a grade of the Graded (0..3) scale."]},
    },
    "Error": {
        "type": "object",
        "properties": {"detail": {"type": "string"}},
        "required": ["detail"],
    },
}

_ERRORS = {
    "400": ("ValidationError", "Invalid input; the body names each invalid field."),
    "401": ("Error", "No credentials, or an invalid or revoked token."),
    "403": ("Error", "The caller's role in the team is too low for this operation."),
    "404": ("Error", "No such object in the caller's teams."),
}


# The docs group operations by resource: (tag, what it holds, the paths below /api/v1/ it
# takes), first match wins. Without this every operation sat under one "v1" tag.
RESOURCE_TAGS: list[tuple[str, str, str]] = [
    ("grading", "The grading queue, grades, judgments import and export, and gold items.",
     r"evaluations/\{evaluation_id\}/(next|snapshots|judgments|gold)/|snapshots/"),
    ("metrics", "Metric values per keyword, an evaluation's means per segment, comparisons "
                "of two to ten evaluations, regression verdicts and the CI gate, and the "
                "metric table.",
     r"evaluations/\{evaluation_id\}/(keywords|metrics|compare|metric-table|gate|verdicts)/"
     r"|compare/"),
    # Before evaluations (an evaluation's behaviour-fit is behaviour's) and judges (a judge
    # run's learned grades are).
    ("behaviour", "What users do: a team's behaviour sources (UBI logs, per-position click "
                  "counts, a collector a search front end posts UBI events to), their "
                  "online metrics per keyword, whether an evaluation's offline metrics "
                  "predict them, clicks graders (judges learned from clicks) and the "
                  "evidence of the grades they learned.",
     r"behaviour-sources/|evaluations/\{evaluation_id\}/behaviour-fit/|click-graders/"
     r"|judge-runs/\{run_id\}/learned/"),
    ("judges", "Judges (LLM judges and clicks graders), their runs, calibration, call "
               "logs and judge-human triage.",
     r"evaluations/\{evaluation_id\}/(judge-runs|triage)/|judge-runs/|judges/"),
    ("evaluations", "Evaluations and their lifecycle (start, pause, finish, clone, archive), "
                    "the query sets (versioned keyword lists) they are created from, and "
                    "the schedules that re-run them at due times.",
     r"evaluations/|query-sets/|schedules/"),
    ("endpoints", "Search endpoints and the search models that query them.",
     r"endpoints/|models/"),
    ("scales", "Grading scales and the transformers between them.",
     r"scales/|transformers/"),
    ("notifications", "The caller's notifications, and the teams' webhooks.",
     r"notifications/|webhooks/|teams/\{team_id\}/webhooks/"),
    ("audit", "A team's audit trail: who did what, when and from where (team owners).",
     r"teams/\{team_id\}/audit/"),
    ("teams", "The caller, teams and invitations.", r"me/|teams/"),
]
# The order the docs list them in.
TAG_ORDER = ("evaluations", "endpoints", "grading", "judges", "scales", "metrics",
             "behaviour", "notifications", "teams", "audit")
_TAG_PATTERNS = [(tag, re.compile(r"/api/v1/(?:" + paths + ")")) for tag, _, paths
                 in RESOURCE_TAGS]


def resource_tag(path: str) -> str:
    """The resource tag of an operation's path; the path's first part if none matches."""
    for tag, pattern in _TAG_PATTERNS:
        if pattern.match(path):
            return tag
    return path.removeprefix("/api/v1/").split("/")[0]


def _response(component: str, description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{component}"}}},
    }


class AutoSchema(openapi.AutoSchema):
    def get_serializer_name(self, serializer, direction) -> str:
        parts = type(serializer).__qualname__.split(".")
        if len(parts) == 1:
            return parts[0]
        return "".join(
            part.removesuffix("Serializer").removesuffix("Api") for part in parts
        )

    def get_tags(self) -> list[str]:
        return [resource_tag(self.path)]

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, (component, description) in _ERRORS.items():
            responses.setdefault(code, _response(component, description))
        return responses


def add_error_components(result, generator, request, public):
    """Postprocessing hook: the components the error responses point at."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in ERROR_SCHEMAS.items():
        schemas.setdefault(name, schema)
    descriptions = {tag: description for tag, description, _ in RESOURCE_TAGS}
    result["tags"] = [{"name": tag, "description": descriptions[tag]} for tag in TAG_ORDER]
    return result
