"""An evaluation as the body of an Elasticsearch `_rank_eval` request
(`POST /<index>/_rank_eval`): one rated request a keyword with graded results, and one of
the evaluation's metrics, since Elasticsearch takes one metric a body.

- **The search request.** When the model's endpoint is Elasticsearch-shaped (its URL path
  ends in `/_search` and the model sends a JSON body), each request is that body with the
  keyword in place of `#query#`, less the keys `_rank_eval` refuses or sets itself (`size`,
  `from`, `aggs`, `aggregations`, `suggest`, `highlight`, `_source`). Otherwise (another
  engine, an offline model) the body holds one `templates` entry, a `match` query on
  `field`, and each request names it with the keyword as `query_string`.
- **Ratings** are the evaluation's grades, one a document: the aggregate rounded half up,
  as every other one-grade export (judgments.exports.evaluation_grade_rows). `_index` is
  the endpoint URL's index, or `index` when given; a keyword with no graded result is left
  out (its metric is null here too). The request's `id` is the keyword.
- **The metric** (METRICS, by the evaluation's metric code): precision → `precision` with
  `ignore_unlabeled: true` (our precision counts judged results only); recall → `recall`;
  rr → `mean_reciprocal_rank`; dcg and ndcg → `dcg` with `normalize` false or true; err →
  `expected_reciprocal_rank` with `maximum_relevance` the scale's top grade. Binary metrics
  get `relevant_rating_threshold`: the lowest grade the evaluation's graded → binary
  transformer maps to relevant. The differences Elasticsearch keeps (its DCG gain is
  2^rating - 1; its recall and nDCG see only the ratings given) are `notes`, which the
  API sends as a header.
"""

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

import metrics_engine as core
from evaluations.endpoints.shapes import elasticsearch_shape
from evaluations.models import Evaluation, EvaluationMetric
from judgments.exports import aggregated
from metrics.recompute.run import evaluation_scale, evaluation_transformers
from metrics_engine.scales import BINARY

TEMPLATE_ID = "searchtweak_match"
# Keys of a search body that _rank_eval refuses or sets itself (size: the metric's k).
DROPPED_KEYS = ("size", "from", "aggs", "aggregations", "suggest", "highlight", "_source")
_BINARY_CODES = {"precision": "precision", "recall": "recall", "rr": "mean_reciprocal_rank"}
METRICS = {**_BINARY_CODES, "dcg": "dcg", "ndcg": "dcg", "err": "expected_reciprocal_rank"}
_INDEX = re.compile(r"^[^,*\s]+$")


@dataclass
class RankEvalBody:
    body: dict[str, Any]
    metric_label: str
    index: str
    notes: list[str] = field(default_factory=list)


def metric_choices(evaluation: Evaluation) -> list[tuple[str, str]]:
    """(value of `metric`, label) of each configured metric Elasticsearch has."""
    return [(config.code_at_k, f"{config.code_at_k} → {METRICS[config.code]}")
            for config in _configs(evaluation) if config.code in METRICS]


def _configs(evaluation: Evaluation) -> list[EvaluationMetric]:
    configs = list(evaluation.metric_configs.order_by("position", "id"))
    for config in configs:
        config.code_at_k = core.metric_code_at_k(config.code, config.k)
    return configs


def _chosen(evaluation: Evaluation, metric: str | None) -> EvaluationMetric:
    configs = _configs(evaluation)
    mappable = [config for config in configs if config.code in METRICS]
    if not metric:
        if not mappable:
            raise ValidationError({"metric": (
                "None of this evaluation's metrics has an Elasticsearch _rank_eval "
                "counterpart (precision, recall, rr, dcg, ndcg, err).")})
        return mappable[0]
    wanted = metric.strip().lower()
    config = next((config for config in configs if config.code_at_k == wanted), None)
    if config is None:
        raise ValidationError({"metric": f"{metric!r} is not one of this evaluation's "
                                         f"metrics ({', '.join(c.code_at_k for c in configs)})."})
    if config.code not in METRICS:
        raise ValidationError({"metric": f"Elasticsearch _rank_eval has no {config.code_at_k}: "
                                         "it has precision, recall, mean_reciprocal_rank, dcg "
                                         "(normalized: nDCG) and expected_reciprocal_rank."})
    return config


def relevant_threshold(evaluation: Evaluation) -> int:
    """The lowest grade the evaluation's graded → binary transformer maps to 1."""
    scale = evaluation_scale(evaluation)
    code = scale if isinstance(scale, str) else scale.code
    if code == BINARY:
        return 1
    mapping = evaluation_transformers(evaluation).get(f"{code}->{BINARY}")
    if mapping is None:
        mapping = core.default_transformer(scale, BINARY) or {}
    relevant = [int(grade) for grade, value in mapping.items() if int(value) == 1]
    if not relevant:
        raise ValidationError({"metric": "The evaluation's transformer to binary maps no "
                                         "grade to relevant."})
    return min(relevant)


def _metric_body(evaluation: Evaluation, config: EvaluationMetric, notes: list[str]) -> dict:
    name = METRICS[config.code]
    options: dict[str, Any] = {"k": config.k}
    if config.code in _BINARY_CODES:
        options["relevant_rating_threshold"] = relevant_threshold(evaluation)
    if config.code == "precision":
        options["ignore_unlabeled"] = True
    if config.code == "recall":
        notes.append("Recall: Elasticsearch counts the relevant documents among this body's "
                     "ratings; ours counts the team's pool.")
    if config.code in ("dcg", "ndcg"):
        options["normalize"] = config.code == "ndcg"
        gain = (config.params or {}).get("gain", "linear")
        if gain != "exponential":
            notes.append("DCG: Elasticsearch's gain is 2^rating - 1 (our gain=exponential); "
                         f"this metric's gain is {gain}, so the values differ.")
        if config.code == "ndcg":
            notes.append("nDCG: Elasticsearch's ideal ranking is made of this body's ratings.")
    if config.code == "err":
        scale = evaluation_scale(evaluation)
        options["maximum_relevance"] = (core.SCALES[scale] if isinstance(scale, str)
                                        else scale).hi
    return {name: options}


def _search_request(template: str, keyword: str, dropped: set[str]) -> dict:
    """The model's body for `keyword` less DROPPED_KEYS (added to `dropped`)."""
    text = template.replace("#query#", json.dumps(keyword, ensure_ascii=False)[1:-1])
    try:
        request = json.loads(text)
    except ValueError:
        request = None
    if not isinstance(request, dict):
        raise ValidationError({"metric": "The model's body is not a JSON object once the "
                                         f"keyword {keyword!r} is in it."})
    dropped.update(key for key in request if key in DROPPED_KEYS)
    return {key: value for key, value in request.items() if key not in DROPPED_KEYS}


def rank_eval_body(evaluation: Evaluation, *, metric: str | None = None,
                   index: str | None = None, field_name: str = "title") -> RankEvalBody:
    """The `_rank_eval` body of the evaluation for one of its metrics (default: the first
    Elasticsearch has). ValidationError on `metric` or `index` when it cannot be written."""
    notes: list[str] = []
    config = _chosen(evaluation, metric)
    template, url_index = elasticsearch_shape(evaluation.model)
    index = (index or "").strip() or url_index
    if not index or not _INDEX.match(index):
        raise ValidationError({"index": (
            f"{index!r} is not one index: give the index the documents live in (each "
            "rating names it)." if index else "The model's endpoint names no index: give "
            "the index the documents live in (each rating names it).")})
    field_name = field_name.strip() or "title"
    requests: list[dict] = []
    dropped: set[str] = set()
    current: dict | None = None
    for item in aggregated(evaluation):
        if current is None or current["id"] != item.keyword_text:
            current = {"id": item.keyword_text, "ratings": []}
            if template is not None:
                current["request"] = _search_request(template, item.keyword_text, dropped)
            else:
                current["template_id"] = TEMPLATE_ID
                current["params"] = {"query_string": item.keyword_text, "field": field_name}
            requests.append(current)
        current["ratings"].append({"_index": index, "_id": item.doc_id,
                                   "rating": math.floor(item.value + 0.5)})
    body: dict[str, Any] = {"requests": requests,
                            "metric": _metric_body(evaluation, config, notes)}
    if template is None:
        body["templates"] = [{"id": TEMPLATE_ID, "template": {"inline": {
            "query": {"match": {"{{field}}": {"query": "{{query_string}}"}}}}}}]
        notes.append(f"The model's endpoint is not Elasticsearch's _search: each request is "
                     f"a match query on the field {field_name!r}.")
    if dropped:
        notes.append(f"Left out of the model's body: {', '.join(sorted(dropped))} "
                     "(_rank_eval refuses them or sets them itself: the size is k).")
    return RankEvalBody(body, config.code_at_k, index, notes)
