"""The grading queue's "grade what decides first" key (Evaluation.grading_order "decisive",
issue 28 item 3), registered into judgments.queries at start-up (metrics.apps): the
bounds it reads are this app's table, and judgments never imports metrics.

A slot's key is the width of its keyword's bounds of the evaluation's first configured
metric (upper - lower, KeywordMetricValue) discounted by its rank, width / ln(position + 1)
(the rank discount of nDCG; ln instead of log2 only rescales), and 0 past that metric's
cutoff k, where a grade cannot move it. A keyword without stored bounds (nothing
recomputed yet, or the metric undefined there) counts as widest. So the queue hands out
first the top results of the keywords least settled, and moves on as grades narrow them;
until the first recompute every keyword is widest and the key interleaves the keywords'
position 1s, then 2s, ... (as Minimal Test Collections weights by rank). The widths are
as stored: between a grade and its recompute the queue reads the last ones.
"""

from django.db import connection

from evaluations.models import EvaluationMetric
from metrics.models import KeywordMetricValue

_q = connection.ops.quote_name
_METRICS = _q(EvaluationMetric._meta.db_table)
_VALUES = _q(KeywordMetricValue._meta.db_table)
# Wider than any metric's bounds: a keyword with none stored counts as widest.
UNKNOWN_WIDTH = 1e6


def decisive_key_sql(*, evaluation: str, keyword: str, position: str) -> str:
    """The key over SQL expressions (judgments.queries.register_decisive_key's contract):
    larger for the slot to hand out first; `evaluation` appears twice."""
    def first(column: str) -> str:
        return (f'(SELECT em."{column}" FROM {_METRICS} em'
                f' WHERE em."evaluation_id" = {evaluation}'
                f' ORDER BY em."position", em."id" LIMIT 1)')

    width = (f'COALESCE((SELECT v."upper" - v."lower" FROM {_VALUES} v'
             f' WHERE v."keyword_id" = {keyword} AND v."metric_id" = {first("id")}),'
             f' {UNKNOWN_WIDTH})')
    return (f'(CASE WHEN {position} <= {first("k")}'
            f" THEN {width} / LN({position} + 1.0) ELSE 0.0 END)")
