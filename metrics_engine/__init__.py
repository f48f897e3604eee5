"""SearchTweak's metric engine: every number of docs/METRICS.md, pure Python + numpy.

No Django here: the application calls these functions with arrays or plain lists and
stores what they return. Values are floats; null is None (per keyword) or NaN (arrays).
"""

from metrics_engine.batch import (
    MetricRequest,
    evaluate_batch,
    evaluate_batch_many,
    evaluate_keyword,
    evaluate_keywords,
    grade_lists_to_array,
    mean_over_keywords,
    positions_present,
)
from metrics_engine.bounds import KeywordBounds, bounds_decision, bounds_mean, keyword_bounds
from metrics_engine.bounds_batch import BatchBounds, bounds_batch, bounds_batch_many
from metrics_engine.errors import MetricInputError
from metrics_engine.pool import Pool, build_pool
from metrics_engine.rbo import rbo
from metrics_engine.registry import (
    ALIASES,
    METRICS,
    PARAMETERS,
    BatchInputs,
    MetricKey,
    MetricSpec,
    Params,
    ParamSpec,
    config_reads_pool,
    metric_code_at_k,
    metric_column,
    metric_key,
    metric_key_label,
    metric_label,
    metric_line,
    metric_spec,
    needs_pool,
    pool_reading_codes,
    resolve_metric_name,
    resolve_params,
    validate_k,
)
from metrics_engine.scales import SCALES, Scale, resolve_scale
from metrics_engine.transform import (
    Transformer,
    default_transformer,
    resolve_transformer,
    validate_transformer,
    validate_transformers,
)

__all__ = [
    "ALIASES",
    "METRICS",
    "PARAMETERS",
    "SCALES",
    "BatchBounds",
    "BatchInputs",
    "KeywordBounds",
    "MetricInputError",
    "MetricKey",
    "MetricRequest",
    "MetricSpec",
    "ParamSpec",
    "Params",
    "Pool",
    "Scale",
    "Transformer",
    "bounds_batch",
    "bounds_batch_many",
    "bounds_decision",
    "bounds_mean",
    "build_pool",
    "config_reads_pool",
    "default_transformer",
    "evaluate_batch",
    "evaluate_batch_many",
    "evaluate_keyword",
    "evaluate_keywords",
    "grade_lists_to_array",
    "keyword_bounds",
    "mean_over_keywords",
    "metric_code_at_k",
    "metric_column",
    "metric_key",
    "metric_key_label",
    "metric_label",
    "metric_line",
    "metric_spec",
    "needs_pool",
    "pool_reading_codes",
    "positions_present",
    "rbo",
    "resolve_metric_name",
    "resolve_params",
    "resolve_scale",
    "resolve_transformer",
    "validate_k",
    "validate_transformer",
    "validate_transformers",
]
