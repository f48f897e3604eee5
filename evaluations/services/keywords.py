"""Keyword lists: cleaning (trim, deduplicate), limits, the TXT/CSV upload, and the rows
an evaluation's keywords are stored as.

One rule for every way keywords arrive (the form's text, an upload, the API, on create and
update): a keyword is NFC text with zero-width characters dropped and each run of
whitespace (tabs and line breaks too) made one space, trimmed; a control character
rejects the list with a message naming its line; an empty list is refused.
"""

import csv
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Max

from evaluations.models import Evaluation, Keyword

MAX_KEYWORD_LENGTH = 500  # Keyword.text's max_length
# Enough to fix a list; a file of garbage would otherwise answer with megabytes of errors.
MAX_UPLOAD_ERRORS = 50

# Invisible in every view of a keyword: two keywords differing only by one would be two rows
# that graders cannot tell apart.
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
# Control characters that are whitespace: collapsed like spaces, not refused.
_WHITESPACE_CONTROLS = frozenset("\t\n\r\x0b\x0c")
# The line ends a browser's textarea and editors number (str.splitlines knows more: \x1c,
# \x85, \u2028, which then could not be named by their line).
_LINE_END = re.compile(r"\r\n|\r|\n")


def keyword_lines(text: str) -> list[str]:
    """The lines of a keywords textarea, split where a person sees them break; like
    str.splitlines, a final line end starts no further line."""
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


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
    """Cleaned keywords (keyword_text_clean) in their first order; duplicates (case-folded)
    and blanks removed. A line with a control character raises a ValidationError on
    `keywords` naming each such line (1-based)."""
    lines = [str(line) for line in lines]
    problems = [f"line {number}: {problem}" for number, problem in (
        (number, keyword_text_problem(line)) for number, line in enumerate(lines, start=1))
        if problem]
    if problems:
        raise ValidationError({"keywords": _capped(problems)})
    result = KeywordList(keywords=[])
    seen: set[str] = set()
    for line in lines:
        text = keyword_text_clean(line)
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


def keyword_upload_size_problem(*, filename: str, size: int) -> str | None:
    """Why a keyword file of `size` bytes is refused before it is read, or None: past
    KEYWORD_UPLOAD_MAX_BYTES it cannot be a valid list (MAX_KEYWORDS keywords of 500
    characters and their line ends)."""
    limit = settings.KEYWORD_UPLOAD_MAX_BYTES
    if size <= limit:
        return None
    return (f"{filename} is {_megabytes(size)}; a keyword file may be at most "
            f"{_megabytes(limit)}. Nothing was read from it; what you typed is kept.")


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def keywords_from_upload(
    *, filename: str, content: bytes | Iterable[bytes], max_keywords: int | None = None
) -> list[str]:
    """Lines of a TXT file, or the first column of a CSV file (a 'keyword' header is skipped).

    `content` is the file's bytes or, for an upload, its chunks (`UploadedFile.chunks()`):
    the file is read a chunk at a time, so only the keywords themselves are held, never a
    copy of the file. Each line is decoded as UTF-8 on its own (like judgments' imports), so
    a file mixing encodings names every bad line; every error names its line, and one error
    rejects the whole file. Reading stops at the first line that would be keyword number
    ``max_keywords + 1`` (default settings.MAX_KEYWORDS; duplicates and blanks not
    counted): a file far over the limit is refused after the limit's worth of lines, not
    after parsing all of it.
    """
    if max_keywords is None:
        max_keywords = settings.MAX_KEYWORDS
    chunks = [content] if isinstance(content, bytes | bytearray) else content
    # Reading order: decoding names a bad line as the rows reach it. A file with lines that
    # are not UTF-8 is answered with those alone (its other errors may be their echo).
    errors: list[str] = []
    decode_errors: list[str] = []
    lines = _decoded_lines(_byte_lines(chunks), errors, decode_errors)
    if filename.lower().endswith(".csv"):
        rows = _csv_first_column(lines)
    else:
        rows = enumerate(lines, start=1)
    keywords: list[str] = []
    distinct: set[str] = set()
    for number, text in rows:
        problem = keyword_text_problem(text)
        cleaned = "" if problem else keyword_text_clean(text)
        if problem:
            errors.append(f"line {number}: {problem}")
        elif len(cleaned) > MAX_KEYWORD_LENGTH:
            errors.append(f"line {number}: keyword longer than {MAX_KEYWORD_LENGTH} characters "
                          f"({len(cleaned):,})")
        if cleaned:
            distinct.add(Keyword.normalize(cleaned))
            if len(distinct) > max_keywords:
                _raise_upload_errors([*errors, (
                    f"line {number}: more than {max_keywords:,} keywords (the most an "
                    "evaluation takes); the file was not read past this line."
                )])
        keywords.append(text)
    if decode_errors:
        _raise_upload_errors(decode_errors)
    if errors:
        _raise_upload_errors(errors)
    return keywords


def _byte_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a file given in chunks, without their line ends. Lines break at \n,
    \r\n and \r only, the line ends editors number (bytes.splitlines knows just these; a
    \r\n split between two chunks is one line end); a final line end starts no further
    line. A leading UTF-8 byte order mark is dropped."""
    parts: list[bytes] = []  # the current line's pieces: a line may span chunks
    after_cr = False  # the last chunk ended with \r: a \n opening the next one is its pair
    number = 0
    for chunk in chunks:
        if after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        after_cr = False
        if not chunk:
            continue
        pieces = chunk.splitlines(keepends=True)
        for piece in pieces:
            parts.append(piece)
            if piece.endswith((b"\n", b"\r")):
                # Joined once per line, not per chunk: a line with no end in sight costs
                # its length, not its length times its chunks.
                number += 1
                yield _line_bytes(parts, first=number == 1)
                parts = []
        after_cr = pieces[-1].endswith(b"\r")
    if parts:
        yield _line_bytes(parts, first=number == 0)


def _line_bytes(parts: list[bytes], *, first: bool) -> bytes:
    line = b"".join(parts).rstrip(b"\r\n")
    return line.removeprefix(b"\xef\xbb\xbf") if first else line


def _decoded_lines(lines: Iterable[bytes], errors: list[str], decode_errors: list[str]
                   ) -> Iterator[str]:
    """The file's lines decoded one by one, lazily; an undecodable line is named in ``errors``
    and read as empty so that later line numbers stay right."""
    for number, raw in enumerate(lines, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            message = (f"line {number}: not UTF-8 text (byte 0x{raw[error.start]:02x} "
                       f"at column {error.start + 1})")
            errors.append(message)
            decode_errors.append(message)
            yield ""


_CSV_HEADERS = frozenset({"keyword", "keywords", "query", "queries"})


def _csv_first_column(lines: Iterator[str]) -> Iterator[tuple[int, str]]:
    """(line number, first field) per CSV row, a 'keyword' header row left out; a quoted
    field may span lines, so a row is numbered by the line it starts on."""
    # csv keeps a quoted field's line break only if the line still carries it.
    reader = csv.reader(line + "\n" for line in lines)
    start = 1
    try:
        for row in reader:
            first = row[0] if row else ""
            if start > 1 or first.strip().lower() not in _CSV_HEADERS:
                yield start, first
            start = reader.line_num + 1
    except csv.Error as error:  # a field beyond csv's size limit
        _raise_upload_errors([f"line {start}: {error}"])


def _capped(errors: list[str]) -> list[str]:
    extra = len(errors) - MAX_UPLOAD_ERRORS
    return errors[:MAX_UPLOAD_ERRORS] + ([f"… and {extra} more errors."] if extra > 0 else [])


def _raise_upload_errors(errors: list[str]) -> None:
    raise ValidationError({"keywords_file": _capped(errors)})


def keywords_validate(keywords: list[str]) -> None:
    """Limits of a cleaned list: at least one keyword, at most settings.MAX_KEYWORDS, each
    within MAX_KEYWORD_LENGTH."""
    if not keywords:
        raise ValidationError({"keywords": "Add at least one keyword."})
    if len(keywords) > settings.MAX_KEYWORDS:
        raise ValidationError({"keywords": f"At most {settings.MAX_KEYWORDS:,} keywords "
                               f"({len(keywords):,} given)."})
    too_long = next((k for k in keywords if len(k) > MAX_KEYWORD_LENGTH), None)
    if too_long:
        raise ValidationError({"keywords": f"{too_long[:40]!r}… is longer than "
                               f"{MAX_KEYWORD_LENGTH} characters."})


def keyword_rows(evaluation: Evaluation, keywords: list[str], start: int = 1) -> list[Keyword]:
    return [Keyword(evaluation=evaluation, position=position, text=text,
                    normalized_text=Keyword.normalize(text))
            for position, text in enumerate(keywords, start=start)]


# Keyword rows built and inserted at a time: 100,000 unsaved Keyword instances would be
# about 100 MB held at once; a batch is one INSERT.
KEYWORD_INSERT_BATCH = 2000


def keywords_insert(evaluation: Evaluation, keywords: list[str], start: int = 1) -> None:
    """Store `keywords` (cleaned) as the evaluation's rows from position `start`, in bulk
    INSERTs of KEYWORD_INSERT_BATCH rows, building each batch's instances only for it."""
    for offset in range(0, len(keywords), KEYWORD_INSERT_BATCH):
        Keyword.objects.bulk_create(keyword_rows(
            evaluation, keywords[offset:offset + KEYWORD_INSERT_BATCH], start=start + offset))


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
    keywords_insert(evaluation, added, start=last + 1)
