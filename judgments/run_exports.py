"""An evaluation's rankings as run files (what it fetched, not what was graded): `trec_run`
and `run_jsonl`, which an offline model's upload reads back (evaluations.offline_runs).
Served by judgments.exports beside the judgments' formats."""

from collections.abc import Iterator

from evaluations.models import Evaluation, Keyword, Snapshot
from judgments.export_text import EXPORT_CHUNK, compact_json, trec_token
from searchtweak.csv_cells import text_pieces


def trec_run_stream(evaluation: Evaluation) -> Iterator[str]:
    """`qid Q0 docid rank score tag` per fetched result; a keyword's results are held until
    its last one is read, since the score counts them."""
    tag = f"searchtweak-{evaluation.pk}"
    snapshots = (
        Snapshot.objects.filter(keyword__evaluation=evaluation)
        .order_by("keyword__position", "position")
        .values_list("keyword__position", "doc_id")
    )

    def lines() -> Iterator[str]:
        keyword_position: int | None = None
        doc_ids: list[str] = []
        for position, doc_id in snapshots.iterator(chunk_size=EXPORT_CHUNK):
            if position != keyword_position:
                yield from _run_lines(keyword_position, doc_ids, tag)
                keyword_position, doc_ids = position, []
            doc_ids.append(doc_id)
        yield from _run_lines(keyword_position, doc_ids, tag)

    return text_pieces(lines())


def _run_lines(keyword_position: int | None, doc_ids: list[str], tag: str) -> Iterator[str]:
    for rank, doc_id in enumerate(doc_ids, start=1):
        score = len(doc_ids) - rank + 1
        yield f"{keyword_position} Q0 {trec_token(doc_id)} {rank} {score} {tag}\n"


def trec_run(evaluation: Evaluation) -> str:
    return "".join(trec_run_stream(evaluation))


# Keywords whose snapshots one query reads, for run_jsonl.
RUN_KEYWORD_CHUNK = 500
# A snapshot's own columns in a run_jsonl result; a field of the same name (a mapper
# label) would be read back as the column, so it is left out (offline_runs.parsing).
_RUN_OWN_KEYS = ("doc_id", "name", "image")


def run_jsonl_stream(evaluation: Evaluation) -> Iterator[str]:
    """One JSON object a fetched keyword: its snapshots in position order."""
    keywords = (evaluation.keywords.filter(fetch_status=Keyword.FetchStatus.FETCHED)
                .order_by("position").values_list("pk", "text"))

    def lines() -> Iterator[str]:
        chunk: list[tuple[int, str]] = []
        for row in keywords.iterator(chunk_size=EXPORT_CHUNK):
            chunk.append(row)
            if len(chunk) == RUN_KEYWORD_CHUNK:
                yield from _run_jsonl_lines(chunk)
                chunk = []
        yield from _run_jsonl_lines(chunk)

    return text_pieces(lines())


def _run_jsonl_lines(keywords: list[tuple[int, str]]) -> Iterator[str]:
    results: dict[int, list[dict]] = {keyword_id: [] for keyword_id, _ in keywords}
    for keyword_id, doc_id, name, image, fields in Snapshot.objects.filter(
            keyword_id__in=results).order_by("keyword_id", "position").values_list(
            "keyword_id", "doc_id", "name", "image", "fields"):
        result = {"doc_id": doc_id, "name": name, **({"image": image} if image else {})}
        result.update((key, value) for key, value in (fields or {}).items()
                      if key not in _RUN_OWN_KEYS)
        results[keyword_id].append(result)
    for keyword_id, text in keywords:
        yield compact_json({"keyword": text, "results": results[keyword_id]}) + "\n"
