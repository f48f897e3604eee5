"""The grading queue's "grade what decides first" key (Evaluation.grading_order "decisive",
issue 28 item 3), registered into judgments.queries at start-up (metrics.apps): the
bounds it reads are this app's table, and judgments never imports metrics.

A slot's key is the width of its keyword's bounds of the evaluation's first configured
metric (upper - lower, KeywordMetricValue) discounted by its rank, width / ln(position + 1)
(the rank discount of nDCG; ln instead of log2 only rescales), and 0 past that metric's
cutoff k, where a grade cannot move it. A keyword without stored bounds (nothing
recomputed yet, or the metric undefined there) counts as widest. So the queue hands out
first the top results of the keywords least settled, and moves on as grades narrow them;
among equally wide keywords (before the first recompute, all) it interleaves the
keywords' position 1s, then 2s, ... (as Minimal Test Collections weights by rank).

The claim sorts only the free slots of the CANDIDATE_KEYWORDS widest keywords (ties:
keyword order), so it costs a scan of the evaluation's keywords and their bounds, not of
its slots; if those have nothing free it takes position order. The widths are as stored:
between a grade and its recompute the queue reads the last ones.
"""

from django.db import connection

from evaluations.models import EvaluationMetric, Keyword
from metrics.models import KeywordMetricValue

_q = connection.ops.quote_name
_METRICS = _q(EvaluationMetric._meta.db_table)
_VALUES = _q(KeywordMetricValue._meta.db_table)
_KEYWORDS = _q(Keyword._meta.db_table)
# Wider than any metric's bounds: a keyword with none stored counts as widest.
UNKNOWN_WIDTH = 1e6
# How many of the widest keywords a claim sorts the free slots of. More than the graders
# who can hold one at a time, and than the keywords graded but not yet recomputed, so the
# pick rarely comes back empty (the claim then takes position order).
CANDIDATE_KEYWORDS = 8


def _first_metric(evaluation: str, column: str) -> str:
    return (f'(SELECT em."{column}" FROM {_METRICS} em WHERE em."evaluation_id" = {evaluation}'
            f' ORDER BY em."position", em."id" LIMIT 1)')


def _width(evaluation: str, keyword: str) -> str:
    return (f'COALESCE((SELECT v."upper" - v."lower" FROM {_VALUES} v'
            f' WHERE v."keyword_id" = {keyword}'
            f' AND v."metric_id" = {_first_metric(evaluation, "id")}), {UNKNOWN_WIDTH})')


def decisive_key_sql(*, evaluation: str, keyword: str, position: str) -> tuple[str, str]:
    """(candidates, key) over SQL expressions (judgments.queries.register_decisive_key's
    contract): the CANDIDATE_KEYWORDS widest keywords of the evaluation (ties: keyword
    order), and the slot's key, larger for the one to hand out first."""
    metric = _first_metric(evaluation, "id")
    candidates = (f'SELECT kw."id" FROM {_KEYWORDS} kw LEFT JOIN {_VALUES} v'
                  f' ON v."keyword_id" = kw."id" AND v."metric_id" = {metric}'
                  f' WHERE kw."evaluation_id" = {evaluation}'
                  f' ORDER BY COALESCE(v."upper" - v."lower", {UNKNOWN_WIDTH}) DESC, kw."position"'
                  f' LIMIT {CANDIDATE_KEYWORDS}')
    key = (f'(CASE WHEN {position} <= {_first_metric(evaluation, "k")}'
           f" THEN {_width(evaluation, keyword)} / LN({position} + 1.0) ELSE 0.0 END)")
    return candidates, key


def first_metric_bounds_width(*, evaluation_id: int, keyword_id: int
                              ) -> tuple[int, float | None] | None:
    """(k of the evaluation's first metric, the stored width of the keyword's bounds of it,
    None when none is stored), or None without a metric: what an adaptive ("1 → 3")
    evaluation reads to decide whether a result weighs on a keyword still wide
    (judgments.adaptive.register_bounds_width's contract, registered in metrics.apps)."""
    config = (EvaluationMetric.objects.filter(evaluation_id=evaluation_id)
              .order_by("position", "id").values_list("pk", "k").first())
    if config is None:
        return None
    bounds = (KeywordMetricValue.objects.filter(keyword_id=keyword_id, metric_id=config[0])
              .values_list("lower", "upper").first())
    if bounds is None or None in bounds:
        return config[1], None
    return config[1], bounds[1] - bounds[0]
