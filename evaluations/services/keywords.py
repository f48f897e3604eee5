"""Keyword lists: cleaning (trim, deduplicate), limits, the TXT/CSV upload, and the rows
an evaluation's keywords are stored as."""

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Max

from evaluations.models import Evaluation, Keyword

MAX_KEYWORDS = 10_000
MAX_KEYWORD_LENGTH = 500  # Keyword.text's max_length


@dataclass
class KeywordList:
    keywords: list[str]
    duplicate_count: int = 0
    blank_count: int = 0

    def notice(self) -> str:
        removed = []
        if self.duplicate_count:
            removed.append(f"{self.duplicate_count} duplicate"
                           f"{'s' if self.duplicate_count != 1 else ''}")
        if self.blank_count:
            removed.append(f"{self.blank_count} blank line{'s' if self.blank_count != 1 else ''}")
        return f"Removed {' and '.join(removed)}." if removed else ""


def keywords_clean(lines: Iterable[str]) -> KeywordList:
    """Trimmed keywords in their first order; duplicates (case-folded) and blanks removed."""
    result = KeywordList(keywords=[])
    seen: set[str] = set()
    for line in lines:
        text = str(line).strip()
        if not text:
            result.blank_count += 1
            continue
        normalized = Keyword.normalize(text)
        if normalized in seen:
            result.duplicate_count += 1
            continue
        seen.add(normalized)
        result.keywords.append(text)
    return result


# Enough to fix a file; a file of garbage would otherwise answer with megabytes of errors.
MAX_UPLOAD_ERRORS = 50


def keywords_from_upload(*, filename: str, content: bytes) -> list[str]:
    """Lines of a TXT file, or the first column of a CSV file (a 'keyword' header is skipped).

    Each line is decoded as UTF-8 on its own (like judgments' imports), so a file mixing
    encodings names every bad line; every error names its line, and one error rejects the
    whole file.
    """
    if content.startswith(b"\xef\xbb\xbf"):
        content = content[3:]
    errors: list[str] = []
    lines: list[str] = []
    # bytes.splitlines breaks at \n, \r\n and \r only, the line ends editors number.
    for number, raw in enumerate(content.splitlines(), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            errors.append(f"line {number}: not UTF-8 text (byte 0x{raw[error.start]:02x} "
                          f"at column {error.start + 1})")
            continue
        if b"\x00" in raw:  # PostgreSQL text cannot hold it: a binary file, not keywords
            errors.append(f"line {number}: contains a NUL character")
    if errors:
        _raise_upload_errors(errors)
    if filename.lower().endswith(".csv"):
        # A quoted CSV field may span lines: a row is numbered by the line it starts on.
        rows: list[tuple[int, str]] = []
        reader = csv.reader(io.StringIO("\n".join(lines)))
        start = 1
        try:
            for row in reader:
                rows.append((start, row[0] if row else ""))
                start = reader.line_num + 1
        except csv.Error as error:  # a field beyond csv's size limit
            _raise_upload_errors([f"line {start}: {error}"])
        if rows and rows[0][1].strip().lower() in {"keyword", "keywords", "query", "queries"}:
            rows = rows[1:]
    else:
        rows = list(enumerate(lines, start=1))
    errors = [f"line {number}: keyword longer than {MAX_KEYWORD_LENGTH} characters "
              f"({len(text.strip()):,})"
              for number, text in rows if len(text.strip()) > MAX_KEYWORD_LENGTH]
    if errors:
        _raise_upload_errors(errors)
    return [text for _, text in rows]


def _raise_upload_errors(errors: list[str]) -> None:
    extra = len(errors) - MAX_UPLOAD_ERRORS
    shown = errors[:MAX_UPLOAD_ERRORS] + ([f"… and {extra} more errors."] if extra > 0 else [])
    raise ValidationError({"keywords_file": shown})


def keywords_validate(keywords: list[str]) -> None:
    if len(keywords) > MAX_KEYWORDS:
        raise ValidationError({"keywords": f"At most {MAX_KEYWORDS:,} keywords "
                               f"({len(keywords):,} given)."})
    too_long = next((k for k in keywords if len(k) > MAX_KEYWORD_LENGTH), None)
    if too_long:
        raise ValidationError({"keywords": f"{too_long[:40]!r}… is longer than "
                               f"{MAX_KEYWORD_LENGTH} characters."})


def keyword_rows(evaluation: Evaluation, keywords: list[str], start: int = 1) -> list[Keyword]:
    return [Keyword(evaluation=evaluation, position=position, text=text,
                    normalized_text=Keyword.normalize(text))
            for position, text in enumerate(keywords, start=start)]


def evaluation_keywords_replace(*, evaluation: Evaluation, keywords: list[str]) -> None:
    """Make the evaluation's keywords `keywords` (cleaned): new ones are added after the
    last position; removed ones are deleted while it never started, refused after."""
    keywords = keywords_clean(keywords).keywords
    keywords_validate(keywords)
    wanted = {Keyword.normalize(text) for text in keywords}
    existing = {k.normalized_text: k for k in evaluation.keywords.all()}
    if evaluation.has_started():
        removed = [k.text for norm, k in existing.items() if norm not in wanted]
        if removed:
            raise ValidationError({"keywords": f"cannot remove keywords after the first start "
                                   f"({removed[0]!r} …)"})
    else:
        evaluation.keywords.exclude(normalized_text__in=wanted).delete()
    # Positions are kept for existing keywords; new ones go after the last.
    last = evaluation.keywords.aggregate(last=Max("position"))["last"] or 0
    added = [text for text in keywords if Keyword.normalize(text) not in existing]
    Keyword.objects.bulk_create(keyword_rows(evaluation, added, start=last + 1),
                                batch_size=1000)
