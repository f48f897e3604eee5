"""Text forms every export shares: compact JSON, a TREC token, rows read at a time."""

import json

# Rows read from the database at a time (a server-side cursor on PostgreSQL), and the
# (keyword, document) pairs aggregated at a time, while an export streams.
EXPORT_CHUNK = 5000


def compact_json(value: object) -> str:
    """`value` as DRF's JSONRenderer writes it with our settings: compact, UTF-8 kept, no
    NaN, and U+2028/U+2029 escaped (a JavaScript reader of the text breaks on them raw)."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def trec_token(value: str) -> str:
    """A value as one whitespace-free TREC column (runs of whitespace become "_")."""
    return "_".join(value.split()) or "_"
