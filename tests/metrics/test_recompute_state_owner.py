"""metrics owns the pipeline's state (metrics.models: keyword marks, values, means,
progress and recompute error) and alone writes it; the marks have one writer module, and no
app's hand-written SQL writes another app's table."""

import re

from tests.source_scan import matching_lines

MARK_WRITES = [
    r'(?i)(insert\s+into|update)\s+"?metrics_keywordrecomputemark\b',  # the table hard-coded
    r"^\s*[\w.]+\.(version|computed_version|dirty_since)\s*=[^=]",  # mark.version = ...
    r"\b(version|computed_version|dirty_since)\s*=\s*(F\(|Coalesce\(|Value\(|None\b)",  # ORM
    r'"?\bversion"?\s*=\s*[\w.{}"]*version\s*\+\s*1',  # SQL: version = version + 1
    r'"?\bdirty_since"?\s*=\s*(COALESCE|CASE|NULL)',  # SQL: dirty_since = ...
    r"\bcomputed_version\s*=\s*computed\.",  # SQL: computed_version = ...
]
MARK_STATEMENTS = ["keyword_version_bump_if_dirty", "keywords_version_bump_if_dirty",
                   "keywords_version_bump",
                   "evaluation_fetched_keywords_version_bump", "keywords_mark_computed",
                   "keyword_version_bump_cte"]
# The tables metrics owns, as Django names them, and the models' names.
METRICS_TABLES = ["keywordrecomputemark", "metricmean", "evaluationrecomputestate",
                  "keywordmetricvalue", "metrichistorypoint", "recomputedue",
                  "keywordqueuewidth", "metricsums", "keyworddashboardshare",
                  "dashboardcount"]
METRICS_MODELS = ["KeywordRecomputeMark", "MetricMean", "EvaluationRecomputeState",
                  "KeywordMetricValue", "MetricHistoryPoint", "RecomputeDue",
                  "KeywordQueueWidth", "MetricSums", "KeywordDashboardShare",
                  "DashboardCount"]


def test_only_metrics_queries_writes_the_keyword_marks():
    found = matching_lines(MARK_WRITES)
    assert set(found) == {"metrics/queries.py"}, found
    # A scan that found nothing could not fail: the statements are there.
    assert len(found["metrics/queries.py"]) >= 4, found


def test_only_the_marks_module_calls_the_mark_statements():
    callers = matching_lines([rf"\bqueries\.{name}\(" for name in MARK_STATEMENTS])
    assert set(callers) == {"metrics/recompute/marks.py"}, callers


def test_no_other_app_writes_the_tables_metrics_owns():
    tables = "|".join(METRICS_TABLES)
    models = "|".join(METRICS_MODELS)
    writes = matching_lines([
        rf'(?i)(insert\s+into|update|delete\s+from)\s+"?metrics_({tables})\b',
        rf"\b({models})\.objects\b[^\n]*\.(update|create|bulk_create|update_or_create|delete)\(",
        rf"\b({models})\([^)]*\)\.save\(",
    ])
    outside = {path for path in writes if not path.startswith("metrics/")}
    assert not outside, writes


def test_metrics_writes_no_table_of_another_app():
    # metrics' statements take table names from _meta (metrics/queries.py `_table`): a
    # write names its target first, so an UPDATE or INSERT INTO of another app's model
    # is `UPDATE {_table(Evaluation)}` or the like.
    found = matching_lines([
        r"(?i)(UPDATE|INSERT INTO|DELETE FROM)\s+\{_table\((?!KeywordRecomputeMark|MetricMean"
        r"|EvaluationRecomputeState|KeywordMetricValue|MetricHistoryPoint|RecomputeDue"
        r"|KeywordQueueWidth|MetricSums|KeywordDashboardShare|DashboardCount)\w+\)\}",
    ])
    assert not found, found
    # The scan reads the statements it means to: metrics' own writes are found.
    own = matching_lines([r"(?i)(UPDATE|INSERT INTO)\s+\{_table\(\w+\)\}"])
    assert len(own.get("metrics/queries.py", [])) >= 3, own
    assert re.search(r"MetricMean|EvaluationRecomputeState",
                     " ".join(own["metrics/queries.py"])), own
