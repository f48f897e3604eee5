"""The models of evaluations, one module per concern; Django finds them here.

- `endpoints`: Endpoint, SearchModel, OfflineRun, OfflineRanking, OfflineRunBlock;
- `evaluations`: Evaluation, EvaluationMetric;
- `keywords`: Keyword, Snapshot;
- `query_sets`: KeywordSet (the pages' "query set"), QuerySetVersion, QuerySetKeyword;
- `demo`: DemoProduct;
- `team_owned`: the manager of rows a team owns.
"""

from evaluations.models.demo import DemoProduct
from evaluations.models.endpoints import (
    Endpoint,
    OfflineRanking,
    OfflineRun,
    OfflineRunBlock,
    SearchModel,
)
from evaluations.models.evaluations import Evaluation, EvaluationMetric
from evaluations.models.keywords import Keyword, Snapshot
from evaluations.models.query_sets import KeywordSet, QuerySetKeyword, QuerySetVersion

__all__ = [
    "DemoProduct",
    "Endpoint",
    "Evaluation",
    "EvaluationMetric",
    "Keyword",
    "KeywordSet",
    "OfflineRanking",
    "OfflineRun",
    "OfflineRunBlock",
    "QuerySetKeyword",
    "QuerySetVersion",
    "SearchModel",
    "Snapshot",
]
