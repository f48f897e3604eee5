"""The API's keyword lists: each keyword a plain string or an object {"keyword", "weight",
"tags"}, for evaluations and query sets alike. The field checks the shape; the weight and
tags rules are services.keywords', which names a problem by the item's line
("line 3: weight: …") in a 400 on `keywords`."""

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evaluations.services.keywords import MAX_KEYWORD_LENGTH, MAX_TAG_LENGTH, MAX_TAGS
from searchtweak.integers import INT_MAX

_OBJECT_KEYS = frozenset({"keyword", "weight", "tags"})

KEYWORD_OBJECT_SCHEMA = {
    "type": "object",
    "properties": {
        "keyword": {"type": "string", "maxLength": MAX_KEYWORD_LENGTH},
        "weight": {"type": "integer", "minimum": 0, "maximum": INT_MAX, "default": 1,
                   "description": "How often people ask it (a non-negative integer)."},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": MAX_TAG_LENGTH},
                 "description": f"Up to {MAX_TAGS} tags (head, torso and tail not "
                                "counted), e.g. lang:de; stored lower-cased and sorted."},
    },
    "required": ["keyword"],
    "additionalProperties": False,
}


@extend_schema_field({"oneOf": [{"type": "string", "maxLength": MAX_KEYWORD_LENGTH},
                                KEYWORD_OBJECT_SCHEMA]})
class KeywordItemField(serializers.Field):
    """A keyword: a string, or an object with its weight and tags (handed on as a dict)."""

    default_error_messages = {
        "shape": 'A keyword is a string or an object {{"keyword", "weight", "tags"}}.',
        "keys": "Unknown keys: {keys} (a keyword object has keyword, weight and tags).",
        "keyword": "keyword: a string of at most {limit} characters is required.",
    }

    def to_internal_value(self, data: Any) -> str | dict[str, Any]:
        # Trimmed as a CharField trims (str.strip(): U+0085 and U+001C..U+001F too), which
        # the list's items were before they could be objects.
        if isinstance(data, str):
            data = data.strip()
            if len(data) > MAX_KEYWORD_LENGTH:
                self.fail("keyword", limit=MAX_KEYWORD_LENGTH)
            return data
        if not isinstance(data, dict):
            self.fail("shape")
        unknown = set(data) - _OBJECT_KEYS
        if unknown:
            self.fail("keys", keys=", ".join(sorted(map(str, unknown))[:5]))
        keyword = data.get("keyword")
        if not isinstance(keyword, str) or len(keyword.strip()) > MAX_KEYWORD_LENGTH:
            self.fail("keyword", limit=MAX_KEYWORD_LENGTH)
        return {**data, "keyword": keyword.strip()}

    def to_representation(self, value: Any) -> Any:
        return value


KEYWORDS_HELP = (
    "One keyword per item: a string, or an object {\"keyword\", \"weight\", \"tags\"} "
    "(weight: how often people ask it, a non-negative integer, default 1; tags: a list of "
    "strings). Stored with runs of whitespace as one space and zero-width characters "
    "dropped; duplicates (ignoring case; the first one's weight and tags kept) and blanks "
    "are removed. A control character, a weight or tags that break the rule (a message "
    "naming the item's line and field), or no keyword left, is a 400 on keywords.")


def keywords_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(child=KeywordItemField(), **kwargs)


def weight_output_field() -> serializers.IntegerField:
    """A keyword's weight in an answer."""
    return serializers.IntegerField(help_text="How often people ask it (1 unless given).")


def tags_output_field() -> serializers.ListField:
    """A keyword's tags in an answer."""
    return serializers.ListField(child=serializers.CharField(),
                                 help_text="Its tags, sorted; head, torso or tail when a "
                                           "query set's traffic segments tagged it.")
