"""A run file streamed into a run's OfflineRankings, in memory bounded whatever the file's
size (docs/decisions/0019). Called inside the upload's transaction: an error raises
RunFileError naming the first line that breaks a rule, as parsing.parse_trec_run and
parse_jsonl_run would, and the caller's rollback leaves nothing stored.

- TREC: the lines, checked alone, are staged in the database a block at a time (the
  consecutive lines of one topic: OfflineRunBlock, COPY on PostgreSQL); one sorted read
  brings each topic's blocks back together in the file's order, whatever order the file
  had them in; `ranked_topic` checks and orders each topic, and its ranking is stored.
  The staged blocks are deleted in the same transaction.
- JSON Lines: a line holds a whole keyword, so its ranking is stored as read; a keyword
  on an earlier line too is found in the chunk being built and, for earlier chunks, by a
  lookup in the run's rankings (their unique key) before the chunk is written.
"""

import json
from collections.abc import Iterable
from itertools import chain, groupby
from operator import itemgetter

from django.db.models import Min

from evaluations.models import Keyword, OfflineRanking, OfflineRun, OfflineRunBlock
from evaluations.offline_runs.parsing import (
    MAX_KEYWORDS,
    MAX_RESULTS,
    RunDocument,
    RunFileError,
    ranked_topic,
    read_jsonl_lines,
    read_trec_lines,
)
from searchtweak.bulk_insert import bulk_insert, bulk_insert_rows

# Staged blocks are inserted once they hold this many lines between them: a few hundred
# kilobytes of text.
STAGE_LINES = 10_000
# Rankings are written once they hold this many documents between them (a hundred
# rankings of a hundred), or this many rankings: what is built at once, not the run.
WRITE_DOCUMENTS = 10_000
WRITE_RANKINGS = 2_000
# Staged blocks fetched at a time by the sorted read (a block holds up to MAX_RESULTS + 1
# lines).
READ_CHUNK = 100

# A staged line: (line, doc id, rank).
TrecTriple = tuple[int, str, int]


def _first(*errors: RunFileError | None) -> RunFileError | None:
    found = [error for error in errors if error is not None]
    return min(found, key=lambda error: error.line) if found else None


def _documents(documents: list[RunDocument] | list[str]) -> list[dict]:
    """A ranking as OfflineRanking.documents holds it: a document's doc id, and its name,
    image and other fields only when it has them (a TREC run has none), so that a fetch
    reads a third of the JSON."""
    if documents and isinstance(documents[0], str):
        return [{"doc_id": doc_id} for doc_id in documents]
    stored = []
    for d in documents:
        row: dict = {"doc_id": d.doc_id}
        if d.name:
            row["name"] = d.name
        if d.image:
            row["image"] = d.image
        if d.fields:
            row["fields"] = d.fields
        stored.append(row)
    return stored


class _RankingWriter:
    """OfflineRankings of one run, written in bounded chunks; counts what it wrote."""

    def __init__(self, run: OfflineRun) -> None:
        self.run = run
        self.pending: list[OfflineRanking] = []
        self.pending_documents = 0
        self.keyword_count = self.result_count = 0

    def add(self, keyword: str, documents: list[RunDocument] | list[str]) -> None:
        self.pending.append(OfflineRanking(run=self.run, keyword=keyword,
                                           documents=_documents(documents)))
        self.pending_documents += len(documents)
        self.keyword_count += 1
        self.result_count += len(documents)

    @property
    def full(self) -> bool:
        return (self.pending_documents >= WRITE_DOCUMENTS
                or len(self.pending) >= WRITE_RANKINGS)

    def flush(self) -> None:
        bulk_insert(self.pending)
        self.pending, self.pending_documents = [], 0


class _BlockStager:
    """A run's lines staged a block at a time, blocks inserted in bounded chunks."""

    def __init__(self, run: OfflineRun) -> None:
        self.template = OfflineRunBlock(run=run, keyword="", line=0, lines="")
        self.keyword: str | None = None
        self.block: list[TrecTriple] = []
        self.pending: list[tuple[str, int, str]] = []
        self.pending_lines = 0

    def add(self, keyword: str, triple: TrecTriple) -> int:
        """Stage a line; how long its block is now."""
        if keyword != self.keyword:
            self._close_block()
            self.keyword = keyword
            if self.pending_lines >= STAGE_LINES:
                self._insert()
        self.block.append(triple)
        return len(self.block)

    def flush(self) -> None:
        self._close_block()
        self._insert()

    def _close_block(self) -> None:
        if self.block:
            self.pending.append((self.keyword, self.block[0][0], json.dumps(self.block)))
            self.pending_lines += len(self.block)
            self.block = []

    def _insert(self) -> None:
        bulk_insert_rows(self.template, ("keyword", "line", "lines"), self.pending)
        self.pending, self.pending_lines = [], 0


def trec_run_store(*, run: OfflineRun, lines: Iterable[bytes | str],
                   topics: dict[str, str] | None = None,
                   max_keywords: int = MAX_KEYWORDS,
                   max_results: int = MAX_RESULTS) -> tuple[int, int]:
    """Store a TREC run's rankings for `run`: (keywords, results) stored.

    Consecutive lines of one topic (a block: a whole topic in a file grouped by topic, one
    line in a file written rank by rank) are staged as one OfflineRunBlock, in chunks
    (COPY on PostgreSQL). A block longer than `max_results` stops the reading: the rule
    it breaks is broken on one of its lines, so no later line can be the first error."""
    problem: RunFileError | None = None
    stager = _BlockStager(run)
    try:
        for line, keyword, doc_id, rank in read_trec_lines(lines, topics=topics,
                                                           normalize=Keyword.normalize):
            if stager.add(keyword, (line, doc_id, rank)) > max_results:
                break
    except RunFileError as error:
        # A line's own error: every line above it is staged and checked below, as a
        # rule across lines may break first.
        problem = error
    stager.flush()
    writer = _RankingWriter(run)
    staged = (OfflineRunBlock.objects.filter(run=run).order_by("keyword", "line")
              .values_list("keyword", "lines").iterator(READ_CHUNK))
    topic_count = 0
    for keyword, blocks in groupby(staged, key=itemgetter(0)):
        topic_count += 1
        # The topic's lines in the file's order, its blocks decoded as they are reached.
        rows = chain.from_iterable(json.loads(lines) for _, lines in blocks)
        ranked = ranked_topic(keyword, rows, max_results=max_results)
        if isinstance(ranked, RunFileError):
            problem = _first(problem, ranked)
        elif problem is None:
            writer.add(keyword, ranked)
            if writer.full:
                writer.flush()
    if topic_count > max_keywords:
        # The topic that made one too many: the (max_keywords + 1)-th by its first line.
        line = (OfflineRunBlock.objects.filter(run=run).values("keyword")
                .annotate(first=Min("line")).order_by("first", "keyword")
                .values_list("first", flat=True)[max_keywords])
        problem = _first(problem, RunFileError(
            line=line, field="qid", message=f"more than {max_keywords} keywords"))
    if problem is not None:
        raise problem
    writer.flush()
    OfflineRunBlock.objects.filter(run=run).delete()
    return writer.keyword_count, writer.result_count


def _clash(run: OfflineRun, pending: dict[str, int]) -> RunFileError | None:
    """The first line of `pending` (keyword → its line) whose keyword the run already
    ranks from an earlier chunk."""
    stored = OfflineRanking.objects.filter(run=run, keyword__in=list(pending)).values_list(
        "keyword", flat=True)
    clashes = [(pending[keyword], keyword) for keyword in stored]
    if not clashes:
        return None
    line, keyword = min(clashes)
    return RunFileError(line=line, field="keyword",
                        message=f"{keyword!r} is on an earlier line too")


def jsonl_run_store(*, run: OfflineRun, lines: Iterable[bytes | str],
                    max_keywords: int = MAX_KEYWORDS,
                    max_results: int = MAX_RESULTS) -> tuple[int, int]:
    """Store a JSON Lines run's rankings for `run`: (keywords, results) stored. On a line
    with two problems, what the line shows alone is named before a clash with an earlier
    line (the keyword again, one keyword too many)."""
    writer = _RankingWriter(run)
    pending: dict[str, int] = {}
    count = 0
    try:
        for line, keyword, documents in read_jsonl_lines(
                lines, normalize=Keyword.normalize, max_results=max_results):
            if keyword in pending:
                raise RunFileError(line=line, field="keyword",
                                   message=f"{keyword!r} is on an earlier line too")
            count += 1
            if count > max_keywords:
                raise RunFileError(line=line, field="keyword",
                                   message=f"more than {max_keywords} keywords")
            pending[keyword] = line
            writer.add(keyword, documents)
            if writer.full:
                _write_unless_clash(run, writer, pending)
                pending = {}
    except RunFileError as error:
        # Lines above this one not yet checked against earlier chunks may clash first.
        raise _first(error, _clash(run, pending)) from None
    _write_unless_clash(run, writer, pending)
    return writer.keyword_count, writer.result_count


def _write_unless_clash(run: OfflineRun, writer: _RankingWriter,
                        pending: dict[str, int]) -> None:
    if clash := _clash(run, pending):
        raise clash
    writer.flush()
