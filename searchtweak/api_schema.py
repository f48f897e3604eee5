"""How the OpenAPI schema names things and documents errors, for every app's API.

Each API view nests its own `InputSerializer` / `OutputSerializer` (STYLE.md), so the
class name alone is not unique: components are named after the qualified name
(`EvaluationCompareApi.OutputSerializer` → `EvaluationCompareOutput`). Every operation
documents the error shapes the API answers with (docs/ARCHITECTURE.md): 400 `ValidationError` (field
→ messages), and `Error` (`{"detail"}`) for 401, 403 and 404.
"""

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
    return result
