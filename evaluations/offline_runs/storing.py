"""A run file streamed into a run's OfflineRankings, in memory bounded whatever the file's
size (docs/decisions/0019). Called inside the upload's transaction: an error raises
RunFileError naming the first line that breaks a rule, as parsing.parse_trec_run and
parse_jsonl_run would, and the caller's rollback leaves nothing stored.

- TREC: the lines, checked alone, go to OfflineRunLine in chunks (COPY on PostgreSQL);
  one sorted read brings each topic's lines back together in the file's order, whatever
  order the file had them in; `ranked_topic` checks and orders each, and its ranking is
  stored. The staged lines are deleted in the same transaction.
- JSON Lines: a line holds a whole keyword, so its ranking is stored as read; a keyword
  on an earlier line too is found in the chunk being built and, for earlier chunks, by a
  lookup in the run's rankings (their unique key) before the chunk is written.
"""

from collections.abc import Iterable, Iterator
from itertools import groupby

from django.db.models import Min

from evaluations.models import Keyword, OfflineRanking, OfflineRun, OfflineRunLine
from evaluations.offline_runs.parsing import (
    MAX_KEYWORDS,
    MAX_RESULTS,
    RunDocument,
    RunFileError,
    TrecLine,
    ranked_topic,
    read_jsonl_lines,
    read_trec_lines,
)
from searchtweak.bulk_insert import bulk_insert, bulk_insert_rows

# Staged lines per insert: a few hundred kilobytes of tuples.
STAGE_CHUNK = 10_000
# Rankings are written once they hold this many documents between them (a hundred
# rankings of a hundred), or this many rankings: what is built at once, not the run.
WRITE_DOCUMENTS = 10_000
WRITE_RANKINGS = 2_000
# Staged lines fetched at a time by the sorted read.
READ_CHUNK = 10_000


def _first(*errors: RunFileError | None) -> RunFileError | None:
    found = [error for error in errors if error is not None]
    return min(found, key=lambda error: error.line) if found else None


def _documents(documents: list[RunDocument]) -> list[dict]:
    return [{"doc_id": d.doc_id, "name": d.name, "image": d.image, "fields": d.fields}
            for d in documents]


class _RankingWriter:
    """OfflineRankings of one run, written in bounded chunks; counts what it wrote."""

    def __init__(self, run: OfflineRun) -> None:
        self.run = run
        self.pending: list[OfflineRanking] = []
        self.pending_documents = 0
        self.keyword_count = self.result_count = 0

    def add(self, keyword: str, documents: list[RunDocument]) -> None:
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


def trec_run_store(*, run: OfflineRun, lines: Iterable[bytes | str],
                   topics: dict[str, str] | None = None,
                   max_keywords: int = MAX_KEYWORDS,
                   max_results: int = MAX_RESULTS) -> tuple[int, int]:
    """Store a TREC run's rankings for `run`: (keywords, results) stored."""
    problem: RunFileError | None = None
    template = OfflineRunLine(run=run, line=0, keyword="", doc_id="", rank=0)
    reader: Iterator[TrecLine] = read_trec_lines(lines, topics=topics,
                                                 normalize=Keyword.normalize)
    columns = ("line", "keyword", "doc_id", "rank")
    chunk: list[TrecLine] = []
    try:
        for row in reader:
            chunk.append(row)
            if len(chunk) >= STAGE_CHUNK:
                bulk_insert_rows(template, columns, chunk)
                chunk = []
    except RunFileError as error:
        problem = error
    # The last lines, or those above a bad line: a rule across lines may break first.
    bulk_insert_rows(template, columns, chunk)
    writer = _RankingWriter(run)
    staged = (OfflineRunLine.objects.filter(run=run).order_by("keyword", "line")
              .values_list("keyword", "line", "doc_id", "rank").iterator(READ_CHUNK))
    topic_count = 0
    for keyword, rows in groupby(staged, key=lambda row: row[0]):
        topic_count += 1
        ranked = ranked_topic(keyword, ((line, doc_id, rank) for _, line, doc_id, rank in rows),
                              max_results=max_results)
        if isinstance(ranked, RunFileError):
            problem = _first(problem, ranked)
        elif problem is None:
            writer.add(keyword, ranked)
            if writer.full:
                writer.flush()
    if topic_count > max_keywords:
        # The topic that made one too many: the (max_keywords + 1)-th by its first line.
        line = (OfflineRunLine.objects.filter(run=run).values("keyword")
                .annotate(first=Min("line")).order_by("first", "keyword")
                .values_list("first", flat=True)[max_keywords])
        problem = _first(problem, RunFileError(
            line=line, field="qid", message=f"more than {max_keywords} keywords"))
    if problem is not None:
        raise problem
    writer.flush()
    OfflineRunLine.objects.filter(run=run).delete()
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
