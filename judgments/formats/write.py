"""(keyword, doc_id, grade) rows written in another tool's format, as pieces of text: what
judgments.exports calls for an evaluation's or the pool's export in these formats."""

from collections.abc import Iterator

from judgments.formats import ltr, quepid_csv, rre, workbench
from searchtweak.csv_cells import text_pieces

KINDS = ("quepid_csv", "rre", "ltr", "workbench")


def foreign_stream(kind: str, rows: Iterator[tuple[str, str, int]], *,
                   title: str) -> Iterator[str]:
    """`rows` in format `kind` (KINDS); `title` names the set where the format has a name
    (RRE's index, the Workbench's judgment list name)."""
    if kind == "quepid_csv":
        lines = quepid_csv.write_quepid_csv(rows)
    elif kind == "ltr":
        lines = ltr.write_ltr(rows)
    elif kind == "rre":
        lines = rre.write_rre(rows, index=title)
    else:
        lines = workbench.write_workbench(rows, name=title)
    return text_pieces(lines)
