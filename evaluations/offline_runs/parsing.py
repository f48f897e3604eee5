"""Reading a run file into a ranking per keyword. Pure Python: no Django, no database.

Two formats:
- TREC run: `qid Q0 docid rank score tag` per line, whitespace-separated; each topic's
  documents ordered by rank. A topic id is mapped to its keyword by `topics` (a
  `qid<TAB>keyword` mapping, parse_topic_map) or, without a mapping, is the keyword's text.
- JSON Lines: `{"keyword": …, "results": [{"doc_id": …, "name": …, …}, …]}` per line,
  results in rank order; `doc_id`, `name` and `image` become the snapshot's own columns,
  every other key is kept in its fields.

Both are read line by line (an iterable of lines, bytes or text), so a large file is never
held whole. Keywords are keyed by `normalize` (the caller passes Keyword.normalize, so
"Shoes" and "shoes " are one keyword, as in an evaluation). Any error raises RunFileError
naming the line (1-based) and the field.

Two layers:
- `read_trec_lines` / `read_jsonl_lines` check what one line shows alone and yield it;
  `ranked_topic` applies the rules across one TREC topic's lines (a document twice, more
  than MAX_RESULTS). The upload (services) streams through these into the database, so
  its memory does not grow with the file.
- `parse_trec_run` / `parse_jsonl_run` build every ranking in memory, checking each rule
  on the line that breaks it: small files, and the reference the streamed upload is
  tested against (their cross-line rules are written separately, in `_Rankings`).
"""

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

MAX_KEYWORDS = 100_000
MAX_RESULTS = 100
# Snapshot.doc_id's column width: a longer id could not be stored.
MAX_DOC_ID_CHARS = 500
# Keyword.text's column width: a longer keyword is in no evaluation.
MAX_KEYWORD_CHARS = 500
# A rank is stored while the run is read (a 32-bit column on every database).
MAX_RANK = 2_147_483_647
# Columns of a snapshot, taken out of a JSON Lines result; the rest goes to its fields.
OWN_KEYS = ("doc_id", "name", "image")


@dataclass(frozen=True)
class RunDocument:
    doc_id: str
    name: str = ""
    image: str = ""
    fields: dict[str, Any] = field(default_factory=dict)


class RunFileError(ValueError):
    """What is wrong with a run file, where: `line` (1-based, 0 for the file as a whole)
    and `field` (the column or key)."""

    def __init__(self, *, line: int, field: str, message: str) -> None:
        self.line, self.field, self.message = line, field, message
        where = f"line {line}, {field}" if line else field
        super().__init__(f"{where}: {message}")


def _text_lines(lines: Iterable[bytes | str]) -> Iterable[tuple[int, str]]:
    for number, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise RunFileError(line=number, field="encoding",
                                   message="not UTF-8 text") from error
        yield number, line.rstrip("\r\n")


Normalize = Callable[[str], str]


def _keyword(text: str, *, line: int, name: str, normalize: Normalize) -> str:
    keyword = normalize(text)
    if not keyword:
        raise RunFileError(line=line, field=name, message="empty keyword")
    if len(keyword) > MAX_KEYWORD_CHARS:
        raise RunFileError(line=line, field=name,
                           message=f"longer than {MAX_KEYWORD_CHARS} characters")
    return keyword


def _doc_id(value: Any, *, line: int, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise RunFileError(line=line, field=name, message="a document id must be a string")
    doc_id = str(value).strip()
    if not doc_id:
        raise RunFileError(line=line, field=name, message="empty document id")
    if len(doc_id) > MAX_DOC_ID_CHARS:
        raise RunFileError(line=line, field=name,
                           message=f"longer than {MAX_DOC_ID_CHARS} characters")
    return doc_id


class _Rankings:
    """Rankings as they are read, each cap checked on the line that would break it."""

    def __init__(self, *, max_keywords: int, max_results: int) -> None:
        self.max_keywords, self.max_results = max_keywords, max_results
        self.by_keyword: dict[str, list[tuple[float, RunDocument]]] = {}
        self.doc_ids: dict[str, set[str]] = {}

    def ranking(self, keyword: str, *, line: int,
                field_name: str) -> list[tuple[float, RunDocument]]:
        ranking = self.by_keyword.get(keyword)
        if ranking is None:
            if len(self.by_keyword) >= self.max_keywords:
                raise RunFileError(line=line, field=field_name,
                                   message=f"more than {self.max_keywords} keywords")
            ranking = self.by_keyword[keyword] = []
            self.doc_ids[keyword] = set()
        return ranking

    def add(self, keyword: str, order: float, document: RunDocument, *, line: int,
            field_name: str) -> None:
        ranking = self.ranking(keyword, line=line, field_name=field_name)
        if len(ranking) >= self.max_results:
            raise RunFileError(line=line, field="results",
                               message=f"more than {self.max_results} results for {keyword!r}")
        if document.doc_id in self.doc_ids[keyword]:
            raise RunFileError(line=line, field="doc_id",
                               message=f"{document.doc_id!r} twice for {keyword!r}")
        self.doc_ids[keyword].add(document.doc_id)
        ranking.append((order, document))

    def ordered(self) -> dict[str, list[RunDocument]]:
        # sorted() is stable: equal ranks keep the file's order.
        return {keyword: [document for _, document in sorted(ranking, key=lambda r: r[0])]
                for keyword, ranking in self.by_keyword.items()}


def parse_topic_map(lines: Iterable[bytes | str],
                    normalize: Normalize = str.strip) -> dict[str, str]:
    """A `qid<TAB>keyword` file (as the TREC exports write it): topic id → keyword."""
    topics: dict[str, str] = {}
    for number, line in _text_lines(lines):
        if not line.strip():
            continue
        qid, tab, text = line.partition("\t")
        if not tab or not qid.strip():
            raise RunFileError(line=number, field="qid",
                               message="expected qid<TAB>keyword")
        if qid.strip() in topics:
            raise RunFileError(line=number, field="qid", message=f"{qid.strip()!r} twice")
        topics[qid.strip()] = _keyword(text, line=number, name="keyword", normalize=normalize)
    return topics


# A TREC line as read_trec_lines yields it: (line number, keyword, doc id, rank).
TrecLine = tuple[int, str, str, int]


def read_trec_lines(lines: Iterable[bytes | str], *, topics: dict[str, str] | None = None,
                    normalize: Normalize = str.strip) -> Iterator[TrecLine]:
    """Each `qid Q0 docid rank score tag` line, checked alone (columns, qid, rank, score,
    docid), in the file's order. With `topics`, a qid it does not list is an error;
    without, the qid is the keyword (so it cannot hold spaces: use a mapping for keywords
    that do)."""
    # The last qid's keyword: a file's lines come topic by topic, mostly.
    last_qid, keyword = None, ""
    for number, line in _text_lines(lines):
        columns = line.split()
        if not columns or columns[0].startswith("#"):
            continue
        if len(columns) != 6:
            raise RunFileError(line=number, field="columns", message=(
                f"expected 6 columns (qid Q0 docid rank score tag), found {len(columns)}"))
        qid, _, doc_id, rank, score, _ = columns
        if qid != last_qid:
            if topics is not None:
                if qid not in topics:
                    raise RunFileError(line=number, field="qid",
                                       message=f"{qid!r} is not in the topic mapping")
                keyword = topics[qid]
            else:
                keyword = _keyword(qid, line=number, name="qid", normalize=normalize)
            last_qid = qid
        try:
            order = int(rank)
        except ValueError:
            raise RunFileError(line=number, field="rank",
                               message=f"{rank!r} is not a whole number") from None
        if not 1 <= order <= MAX_RANK:
            raise RunFileError(line=number, field="rank", message=(
                "ranks start at 1" if order < 1 else f"ranks go up to {MAX_RANK}"))
        try:
            float(score)
        except ValueError:
            raise RunFileError(line=number, field="score",
                               message=f"{score!r} is not a number") from None
        # A column is a non-empty string without spaces: only its length can be wrong.
        if len(doc_id) > MAX_DOC_ID_CHARS:
            doc_id = _doc_id(doc_id, line=number, name="docid")
        yield number, keyword, doc_id, order


def ranked_topic(keyword: str, rows: Iterable[Sequence], *,
                 max_results: int = MAX_RESULTS) -> list[str] | RunFileError:
    """One TREC topic's lines, (line, doc id, rank) in the file's order: its doc ids by
    rank (equal ranks in the file's order), or the first of its lines that breaks a rule
    (a document a second time; a result past `max_results`). Reads at most
    `max_results` + 1 rows, so a topic's memory is bounded whatever the file holds."""
    kept = list(islice(rows, max_results + 1))
    # A document twice among the first max_results lines comes before the line past
    # them; on that line itself, the cap is named (as parse_trec_run checks it first).
    head = kept[:max_results]
    if len({doc_id for _, doc_id, _ in head}) < len(head):
        seen: set[str] = set()
        for line, doc_id, _ in head:
            if doc_id in seen:
                return RunFileError(line=line, field="doc_id",
                                    message=f"{doc_id!r} twice for {keyword!r}")
            seen.add(doc_id)
    if len(kept) > max_results:
        return RunFileError(line=kept[-1][0], field="results",
                            message=f"more than {max_results} results for {keyword!r}")
    kept.sort(key=_by_rank)
    return [doc_id for _, doc_id, _ in kept]


def _by_rank(row: Sequence) -> tuple[int, int]:
    return row[2], row[0]


def read_jsonl_lines(lines: Iterable[bytes | str], *, normalize: Normalize = str.strip,
                     max_results: int = MAX_RESULTS
                     ) -> Iterator[tuple[int, str, list[RunDocument]]]:
    """Each JSON Lines row, checked alone (JSON, keyword, results, each result, at most
    `max_results` of them, no document twice): (line, keyword, documents in the file's
    order). That a keyword is on an earlier line too, and the keyword cap, are the
    caller's rules (they need the lines before)."""
    for number, line in _text_lines(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            raise RunFileError(line=number, field="json",
                               message=f"not JSON ({error.msg})") from None
        if not isinstance(row, dict):
            raise RunFileError(line=number, field="json", message="expected a JSON object")
        if not isinstance(row.get("keyword"), str):
            raise RunFileError(line=number, field="keyword", message="missing or not a string")
        keyword = _keyword(row["keyword"], line=number, name="keyword",
                           normalize=normalize)
        results = row.get("results")
        if not isinstance(results, list):
            raise RunFileError(line=number, field="results", message="missing or not a list")
        documents: list[RunDocument] = []
        doc_ids: set[str] = set()
        for index, result in enumerate(results):
            where = f"results[{index}]"
            if not isinstance(result, dict):
                raise RunFileError(line=number, field=where, message="expected a JSON object")
            doc_id = _doc_id(result.get("doc_id"), line=number, name=f"{where}.doc_id")
            for key in ("name", "image"):
                if not isinstance(result.get(key, ""), str):
                    raise RunFileError(line=number, field=f"{where}.{key}",
                                       message="not a string")
            if len(documents) >= max_results:
                raise RunFileError(line=number, field="results",
                                   message=f"more than {max_results} results for {keyword!r}")
            if doc_id in doc_ids:
                raise RunFileError(line=number, field="doc_id",
                                   message=f"{doc_id!r} twice for {keyword!r}")
            doc_ids.add(doc_id)
            documents.append(RunDocument(
                doc_id, name=result.get("name", ""), image=result.get("image", ""),
                fields={key: value for key, value in result.items() if key not in OWN_KEYS}))
        yield number, keyword, documents


def parse_trec_run(lines: Iterable[bytes | str], *, topics: dict[str, str] | None = None,
                   normalize: Normalize = str.strip, max_keywords: int = MAX_KEYWORDS,
                   max_results: int = MAX_RESULTS) -> dict[str, list[RunDocument]]:
    """keyword → its documents in rank order, the whole file in memory (read_trec_lines'
    rules, then the caps and duplicates on the line that breaks them)."""
    rankings = _Rankings(max_keywords=max_keywords, max_results=max_results)
    for number, keyword, doc_id, rank in read_trec_lines(lines, topics=topics,
                                                         normalize=normalize):
        rankings.add(keyword, rank, RunDocument(doc_id), line=number, field_name="qid")
    return rankings.ordered()


def parse_jsonl_run(lines: Iterable[bytes | str], *, normalize: Normalize = str.strip,
                    max_keywords: int = MAX_KEYWORDS,
                    max_results: int = MAX_RESULTS) -> dict[str, list[RunDocument]]:
    """keyword → its documents in the file's order, the whole file in memory."""
    rankings = _Rankings(max_keywords=max_keywords, max_results=max_results)
    seen: set[str] = set()
    for number, keyword, documents in read_jsonl_lines(lines, normalize=normalize,
                                                       max_results=max_results):
        if keyword in seen:
            raise RunFileError(line=number, field="keyword",
                               message=f"{keyword!r} is on an earlier line too")
        seen.add(keyword)
        # A keyword listed with no results returned nothing, as an endpoint may.
        rankings.ranking(keyword, line=number, field_name="keyword")
        for index, document in enumerate(documents):
            rankings.add(keyword, index, document, line=number, field_name="keyword")
    return rankings.ordered()
