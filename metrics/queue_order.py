"""The grading queue's "grade what decides first" key (Evaluation.grading_order
"decisive"), registered into judgments.queries at start-up (metrics.apps): the
bounds it reads are this app's tables, and judgments never imports metrics.

A slot's key is its keyword's width (KeywordQueueWidth: upper - lower of the stored bounds
of the evaluation's first configured metric) times the weight of its rank: the rank
discount of nDCG, 1 / ln(position + 1) (ln instead of log2 only rescales), 0 past that
metric's cutoff k, where a grade cannot move it. So the queue hands out first the top
results of the keywords least settled, and moves on as grades narrow them; among equally
wide keywords (before the first grades, all) it interleaves the keywords' position 1s,
then 2s, ...

With a comparison set the weight is Minimal Test Collections' (Carterette, Allan and
Sitaraman 2006): what a grade can change in the *difference* of the two sides' DCG,
|discount(rank here) - discount(rank there)|. A result only this side returned (in the top
k) keeps its whole discount; one both returned at the same rank weighs 0 and goes last,
whatever its grade it moves both sides alike. The comparison set of an evaluation is the
one the project keeps: its team's baseline (metrics.TeamBaseline), when that is another
evaluation on the same scale (as a regression verdict requires, metrics.reports.verdicts), its
keywords matched by normalized text (as Compare). Without one, "there" is nowhere and the
weight is the plain discount.

The claim sorts only the free slots of the CANDIDATE_KEYWORDS widest keywords, found by an
index scan of KeywordQueueWidth (evaluation, width desc, keyword position), so it costs
neither a scan of the evaluation's keywords nor of its slots; if those have nothing free
it takes position order, as it does for keywords the recompute has not reached yet (no
width stored). The widths are as last stored: between a grade and its recompute the queue
reads the previous ones.

What it costs: the first metric's k and the comparison set are read inside the claim, once,
as one row beside the slots (`constants`), not as a copy of their subqueries at each use in
the key; the candidate keywords are rows joined to the slots by keyword (judgments.queries.
decisive_queue_order), not a filter PostgreSQL also answered with a bitmap of every ungraded
slot of the evaluation; the claim runs on PostgreSQL's generic plan of it
(searchtweak.sql.fetch_one's generic_plan: PostgreSQL chose a custom plan every time, and
planning this statement cost more than running it); and, as in every claim, a candidate
slot is checked for "the grader holds another slot of this result" or "skipped it" by one
index look-up each (judgments.queries.PROBE). bench/active_order.py --throughput-only
(docs/ARCHITECTURE.md, The grading queue, has the figures).
"""

from django.db import connection
from django.db.models import OuterRef, Subquery

from evaluations.models import Evaluation, EvaluationMetric, Keyword, Snapshot
from metrics.models import KeywordMetricValue, KeywordQueueWidth, TeamBaseline

_q = connection.ops.quote_name
_METRICS = _q(EvaluationMetric._meta.db_table)
_WIDTHS = _q(KeywordQueueWidth._meta.db_table)
_KEYWORDS = _q(Keyword._meta.db_table)
_SNAPSHOTS = _q(Snapshot._meta.db_table)
_EVALUATIONS = _q(Evaluation._meta.db_table)
_BASELINES = _q(TeamBaseline._meta.db_table)
# Wider than any metric's bounds: a keyword with slots to grade and no bounds stored (the
# metric undefined there so far) counts as widest.
UNKNOWN_WIDTH = 1e6
# How many of the widest keywords a claim sorts the free slots of. More than the graders
# who can hold one at a time, and than the keywords graded but not yet recomputed, so the
# pick rarely comes back empty (the claim then takes position order).
CANDIDATE_KEYWORDS = 8


def _first_metric_k(evaluation: str) -> str:
    return (f'(SELECT em."k" FROM {_METRICS} em WHERE em."evaluation_id" = {evaluation}'
            f' ORDER BY em."position", em."id" LIMIT 1)')


def _discount(position: str, k: str) -> str:
    """nDCG's discount of a rank, 0 past k or for no rank (NULL)."""
    # In floating point: PostgreSQL's LN of a NUMERIC (what position + 1.0 would be) is
    # arbitrary-precision and was most of the claim's time.
    return (f"(CASE WHEN {position} <= {k}"
            f" THEN 1.0E0 / LN(CAST({position} AS DOUBLE PRECISION) + 1.0E0) ELSE 0.0E0 END)")


def comparison_sql(evaluation: str) -> str:
    """The id of the evaluation's comparison set (its team's baseline, when another
    evaluation on the same scale), or NULL."""
    return (f'(SELECT tb."evaluation_id" FROM {_EVALUATIONS} e'
            f' JOIN {_BASELINES} tb ON tb."team_id" = e."team_id"'
            f' JOIN {_EVALUATIONS} be ON be."id" = tb."evaluation_id"'
            f' WHERE e."id" = {evaluation} AND be."id" <> e."id" AND be."scale" = e."scale")')


def _discount_there(comparison: str, keyword: str, snapshot: str, k: str) -> str:
    """_discount of where the comparison set's keyword of the same text ranks the slot's
    document (its first position), 0 when it does not (in the top k)."""
    return (f'COALESCE((SELECT 1.0E0 / LN(CAST(MIN(b."position") AS DOUBLE PRECISION) + 1.0E0)'
            f' FROM {_KEYWORDS} tk'
            f' JOIN {_KEYWORDS} bk ON bk."evaluation_id" = {comparison}'
            f' AND bk."normalized_text" = tk."normalized_text"'
            f' JOIN {_SNAPSHOTS} ts ON ts."id" = {snapshot}'
            f' JOIN {_SNAPSHOTS} b ON b."keyword_id" = bk."id" AND b."doc_id" = ts."doc_id"'
            f' WHERE tk."id" = {keyword} AND b."position" <= {k}), 0.0E0)')


def decisive_key_sql(*, evaluation: str, keyword: str, snapshot: str, position: str,
                     constants: str) -> tuple[str, str, str]:
    """(constants, candidates, key) over SQL expressions (judgments.queries.
    register_decisive_key's contract): a one-row SELECT of what every slot's key reads alike
    (the first metric's k, the comparison set's id; the key reads them through the alias
    `constants`), the CANDIDATE_KEYWORDS widest keywords of the evaluation (ties: keyword
    order), and the slot's key, larger for the one to hand out first."""
    # Read once per claim, inside it: a metric's k or the team's baseline can change
    # between two claims, so nothing of them is cached in the process.
    one_row = (f'SELECT {_first_metric_k(evaluation)} AS "k",'
               f' {comparison_sql(evaluation)} AS "comparison"')
    candidates = (f'SELECT w."keyword_id" FROM {_WIDTHS} w WHERE w."evaluation_id" = {evaluation}'
                  f' ORDER BY w."width" DESC, w."keyword_position" LIMIT {CANDIDATE_KEYWORDS}')
    k, comparison = f'{constants}."k"', f'{constants}."comparison"'
    here = _discount(position, k)
    # CASE: without a comparison set (the usual), no per-slot look-up of the other side.
    weight = (f"(CASE WHEN {comparison} IS NULL THEN {here}"
              f" ELSE ABS({here} - {_discount_there(comparison, keyword, snapshot, k)})"
              " END)")
    width = f'(SELECT w."width" FROM {_WIDTHS} w WHERE w."keyword_id" = {keyword})'
    return one_row, candidates, f"({width} * {weight})"


def first_metric_bounds_width(*, evaluation_id: int, keyword_id: int
                              ) -> tuple[int, float | None] | None:
    """(k of the evaluation's first metric, the stored width of the keyword's bounds of it,
    None when none is stored), or None without a metric: what an adaptive ("1 → 3")
    evaluation reads to decide whether a result weighs on a keyword still wide
    (judgments.adaptive.register_bounds_width's contract, registered in metrics.apps)."""
    # One statement: an adaptive grade runs this for each of its results.
    stored = KeywordMetricValue.objects.filter(keyword_id=keyword_id, metric_id=OuterRef("pk"))
    row = (EvaluationMetric.objects.filter(evaluation_id=evaluation_id)
           .order_by("position", "id")
           .annotate(lower=Subquery(stored.values("lower")[:1]),
                     upper=Subquery(stored.values("upper")[:1]))
           .values_list("k", "lower", "upper").first())
    if row is None:
        return None
    k, lower, upper = row
    return k, None if lower is None or upper is None else upper - lower
