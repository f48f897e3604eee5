"""Keyword lists: what a keyword, its weight and its tags are, cleaning (trim, deduplicate),
limits, and the rows an evaluation's keywords are stored as. Typed lines and uploaded
files are read into entries by services.keyword_input.

One rule for every way keywords arrive (the form's text, an upload, the API, a query set,
on create and update): a keyword is NFC text with zero-width characters dropped and each
run of whitespace (tabs and line breaks too) made one space, trimmed; a control character
rejects the list with a message naming its line; an empty list is refused.

A keyword carries a weight and tags (docs/METRICS.md, "Weighted means and segments"):
- the weight is how often people ask it, a non-negative integer as
  `metrics_engine.weighted.validate_weights` reads one (3 and 3.0 are 3; 1.5, -1, true and
  the JSON string "3" are not), at most INT_MAX (its column); 1 when not given;
- a tag is lower-cased text, cleaned as a keyword is, at most MAX_TAG_LENGTH characters,
  without a control character or "|" (which separates tags in a CSV cell); blanks and
  duplicates are dropped and the tags kept sorted, so the same tags in another order are
  the same keyword. At most MAX_TAGS per keyword, the traffic segments (head, torso, tail)
  not counted.
A problem names the line (the item's number for a list) and the field: "line 3: weight:
-1 is not a non-negative integer".
"""

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Max

from evaluations.models import Evaluation, Keyword
from evaluations.signals import keyword_traffic_changed
from metrics_engine.errors import MetricInputError
from metrics_engine.weighted import HEAD, TAIL, TORSO, validate_weights
from searchtweak.integers import INT_MAX

MAX_KEYWORD_LENGTH = 500  # Keyword.text's max_length
MAX_TAG_LENGTH = 50
MAX_TAGS = 20
TAG_SEPARATOR = "|"
# Written by a query set's traffic segments (query_sets.services), so not counted in MAX_TAGS.
TRAFFIC_TAGS = frozenset({HEAD, TORSO, TAIL})
# Enough to fix a list; a file of garbage would otherwise answer with megabytes of errors.
MAX_UPLOAD_ERRORS = 50

# Invisible in every view of a keyword: two keywords differing only by one would be two rows
# that graders cannot tell apart.
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
# A number as a person writes one in a cell (ASCII digits, a point, an exponent); at most
# 40 characters, so no int() or float() reads megabytes. float() alone would take "nan",
# "inf" and "1_0".
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# Control characters that are whitespace: collapsed like spaces, not refused.
_WHITESPACE_CONTROLS = frozenset("\t\n\r\x0b\x0c")


def keyword_text_clean(text: str) -> str:
    """The stored form of a keyword: NFC, zero-width characters dropped, runs of whitespace
    as one space, trimmed."""
    return " ".join(unicodedata.normalize("NFC", text).translate(_ZERO_WIDTH).split())


def keyword_text_problem(text: str) -> str | None:
    """Why `text` cannot be a keyword whatever its cleaning: a C0 or C1 control character
    other than whitespace (a terminal escape, a bell) would reach every page and export."""
    for column, char in enumerate(text, start=1):
        if unicodedata.category(char) == "Cc" and char not in _WHITESPACE_CONTROLS:
            return f"control character U+{ord(char):04X} at column {column}"
    return None


@dataclass(frozen=True, slots=True)
class KeywordEntry:
    """A keyword as it arrives or is stored: its text, weight and tags (sorted)."""

    text: str
    weight: int = 1
    tags: tuple[str, ...] = ()


class FieldProblem(ValueError):
    """A keyword's weight or tags that break the rule; `at(line)` is the message."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def at(self, line: int) -> str:
        return f"line {line}: {self.field}: {self.problem}"


def _shown(value: Any) -> str:
    # str() of an integer past 4,300 digits raises: only a short one is repeated.
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**20:
        return "a number of more than 20 digits"
    return repr(value)


def weight_from_value(value: Any) -> int:
    """A weight given as a JSON value (validate_weights' rule), within the column."""
    try:
        (weight,) = validate_weights([value], 1)
    except MetricInputError:
        raise FieldProblem("weight", f"{_shown(value)} is not a non-negative integer") from None
    return _weight_within_column(weight)


def weight_from_cell(text: str) -> int:
    """A weight typed in a CSV cell: blank is 1; a number (12, 3.0, 1e3) is read as
    validate_weights reads that number; anything else is refused."""
    text = text.strip()
    if not text:
        return 1
    if len(text) > 40 or not _NUMBER.fullmatch(text):
        raise FieldProblem("weight", f"{text[:40]!r} is not a non-negative integer")
    try:
        (weight,) = validate_weights([int(text) if text.isdigit() else float(text)], 1)
    except MetricInputError:
        raise FieldProblem("weight", f"{text!r} is not a non-negative integer") from None
    return _weight_within_column(weight)


def _weight_within_column(weight: int) -> int:
    if weight > INT_MAX:
        shown = "a number of more than 20 digits" if weight >= 10**20 else str(weight)
        raise FieldProblem("weight", f"{shown} is above {INT_MAX:,}, the largest weight")
    return weight


def tags_clean(tags: Iterable[Any]) -> tuple[str, ...]:
    """Tags by the rule above, sorted; a problem is a FieldProblem on `tags`."""
    cleaned: set[str] = set()
    for tag in tags:
        if not isinstance(tag, str):
            raise FieldProblem("tags", f"{_shown(tag)} is not text")
        problem = keyword_text_problem(tag)
        if problem:
            raise FieldProblem("tags", f"{tag!r}: {problem}")
        if TAG_SEPARATOR in tag:
            raise FieldProblem("tags", f"{tag!r}: {TAG_SEPARATOR!r} separates tags")
        text = keyword_text_clean(tag).lower()
        if len(text) > MAX_TAG_LENGTH:
            raise FieldProblem("tags", f"{text[:20]!r}… is longer than {MAX_TAG_LENGTH} "
                                       f"characters ({len(text):,})")
        if text:
            cleaned.add(text)
    counted = len(cleaned - TRAFFIC_TAGS)
    if counted > MAX_TAGS:
        raise FieldProblem("tags", f"{counted} tags; a keyword has at most {MAX_TAGS}")
    return tuple(sorted(cleaned))


def tags_from_cell(text: str) -> tuple[str, ...]:
    """Tags typed in a CSV cell, separated by "|"."""
    return tags_clean(text.split(TAG_SEPARATOR)) if text.strip() else ()


def tags_from_value(value: Any) -> tuple[str, ...]:
    """Tags given as a JSON value: a list of strings."""
    if not isinstance(value, list | tuple):
        raise FieldProblem("tags", "must be a list of strings")
    return tags_clean(value)


def keyword_entry(item: str | KeywordEntry | dict[str, Any]) -> KeywordEntry:
    """An entry from a plain keyword, an entry (checked again) or an API object
    {"keyword", "weight", "tags"} (weight and tags optional); FieldProblem if one breaks
    the rule. The text is not cleaned here (keywords_clean does)."""
    if isinstance(item, str):
        return KeywordEntry(item)
    if isinstance(item, KeywordEntry):
        return KeywordEntry(item.text, weight_from_value(item.weight), tags_clean(item.tags))
    return KeywordEntry(str(item["keyword"]), weight_from_value(item.get("weight", 1)),
                        tags_from_value(item.get("tags", [])))


@dataclass
class KeywordList:
    entries: list[KeywordEntry]
    duplicate_count: int = 0
    blank_count: int = 0

    @property
    def keywords(self) -> list[str]:
        return [entry.text for entry in self.entries]

    def notice(self) -> str:
        removed = []
        if self.duplicate_count:
            removed.append(f"{self.duplicate_count} duplicate"
                           f"{'s' if self.duplicate_count != 1 else ''}")
        if self.blank_count:
            removed.append(f"{self.blank_count} blank line{'s' if self.blank_count != 1 else ''}")
        return f"Removed {' and '.join(removed)}." if removed else ""


def keywords_clean(items: Iterable[str | KeywordEntry | dict[str, Any]]) -> KeywordList:
    """Cleaned entries (keyword_text_clean) in their first order; duplicates (case-folded;
    the first one's weight and tags kept) and blanks removed. An item with a control
    character, or whose weight or tags break the rule, raises a ValidationError on
    `keywords` naming each such item as its line (1-based)."""
    entries: list[KeywordEntry] = []
    problems: list[str] = []
    for number, item in enumerate(items, start=1):
        try:
            entry = keyword_entry(item)
        except FieldProblem as problem:
            problems.append(problem.at(number))
            continue
        problem = keyword_text_problem(entry.text)
        if problem:
            problems.append(f"line {number}: {problem}")
        entries.append(entry)
    if problems:
        raise ValidationError({"keywords": errors_capped(problems)})
    result = KeywordList(entries=[])
    seen: set[str] = set()
    for entry in entries:
        text = keyword_text_clean(entry.text)
        if not text:
            result.blank_count += 1
            continue
        normalized = Keyword.normalize(text)
        if normalized in seen:
            result.duplicate_count += 1
            continue
        seen.add(normalized)
        result.entries.append(KeywordEntry(text, entry.weight, entry.tags))
    return result


def errors_capped(errors: list[str]) -> list[str]:
    extra = len(errors) - MAX_UPLOAD_ERRORS
    return errors[:MAX_UPLOAD_ERRORS] + ([f"… and {extra} more errors."] if extra > 0 else [])


def keywords_validate(keywords: list[KeywordEntry]) -> None:
    """Limits of a cleaned list: at least one keyword, at most settings.MAX_KEYWORDS, each
    within MAX_KEYWORD_LENGTH."""
    if not keywords:
        raise ValidationError({"keywords": "Add at least one keyword."})
    if len(keywords) > settings.MAX_KEYWORDS:
        raise ValidationError({"keywords": f"At most {settings.MAX_KEYWORDS:,} keywords "
                               f"({len(keywords):,} given)."})
    too_long = next((k.text for k in keywords if len(k.text) > MAX_KEYWORD_LENGTH), None)
    if too_long:
        raise ValidationError({"keywords": f"{too_long[:40]!r}… is longer than "
                               f"{MAX_KEYWORD_LENGTH} characters."})


def keyword_rows(evaluation: Evaluation, keywords: list[KeywordEntry], start: int = 1
                 ) -> list[Keyword]:
    return [Keyword(evaluation=evaluation, position=position, text=entry.text,
                    normalized_text=Keyword.normalize(entry.text), weight=entry.weight,
                    tags=list(entry.tags))
            for position, entry in enumerate(keywords, start=start)]


# Keyword rows built and inserted at a time: 100,000 unsaved Keyword instances would be
# about 100 MB held at once; a batch is one INSERT.
KEYWORD_INSERT_BATCH = 2000


def keywords_insert(evaluation: Evaluation, keywords: list[KeywordEntry], start: int = 1
                    ) -> None:
    """Store `keywords` (cleaned) as the evaluation's rows from position `start`, in bulk
    INSERTs of KEYWORD_INSERT_BATCH rows, building each batch's instances only for it."""
    for offset in range(0, len(keywords), KEYWORD_INSERT_BATCH):
        Keyword.objects.bulk_create(keyword_rows(
            evaluation, keywords[offset:offset + KEYWORD_INSERT_BATCH], start=start + offset))


def evaluation_keywords_replace(*, evaluation: Evaluation,
                                keywords: list[str | KeywordEntry | dict[str, Any]]) -> None:
    """Make the evaluation's keywords `keywords` (cleaned here): new ones are added after
    the last position and kept ones take the new weight and tags; removed ones are deleted
    while it never started, refused after."""
    entries = keywords_clean(keywords).entries
    keywords_validate(entries)
    wanted = {Keyword.normalize(entry.text): entry for entry in entries}
    existing = {k.normalized_text: k for k in evaluation.keywords.all()}
    if evaluation.has_started():
        removed = [k.text for norm, k in existing.items() if norm not in wanted]
        if removed:
            raise ValidationError({"keywords": f"cannot remove keywords after the first start "
                                   f"({removed[0]!r} …)"})
    else:
        evaluation.keywords.exclude(normalized_text__in=wanted).delete()
    changed = []
    for normalized, keyword in existing.items():
        entry = wanted.get(normalized)
        if entry is not None and (keyword.weight, tuple(keyword.tags)) != (entry.weight,
                                                                           entry.tags):
            keyword.weight, keyword.tags = entry.weight, list(entry.tags)
            changed.append(keyword)
    Keyword.objects.bulk_update(changed, ["weight", "tags"], batch_size=KEYWORD_INSERT_BATCH)
    if changed and evaluation.has_started():
        # Its metrics' sums per segment were added with the old weights and tags.
        keyword_traffic_changed.send(sender=Keyword, evaluation_id=evaluation.pk)
    # Positions are kept for existing keywords; new ones go after the last.
    last = evaluation.keywords.aggregate(last=Max("position"))["last"] or 0
    added = [entry for entry in entries if Keyword.normalize(entry.text) not in existing]
    keywords_insert(evaluation, added, start=last + 1)
