"""Behaviour simulated from known true grades, stored as a source's sums, and an
evaluation of the same keywords and documents: what the clicks grader's tests learn from."""

from dataclasses import dataclass

import numpy as np

from behaviour.core.simulate import document_position_counts, simulate_query
from behaviour.models import BehaviourCount, BehaviourSource
from evaluations.models import Evaluation, Keyword
from searchtweak.models import Team
from tests.metrics.builders import build_evaluation

# Grade g of the graded scale 0..3 is clicked with probability (g + ½) / 4 once examined:
# the middle of the grade's band under the even cuts.
TRUE_RELEVANCE = {0: 0.125, 1: 0.375, 2: 0.625, 3: 0.875}


@dataclass
class Simulated:
    source: BehaviourSource
    truth: dict[tuple[str, str], int]
    """{(keyword, doc id): true grade}."""


def simulated_source(team: Team, *, keywords: int = 6, documents: int = 6,
                     sessions: int = 4000, seed: int = 5, model: str = "pbm") -> Simulated:
    """Each keyword's documents get true grades 0..3 drawn from the seed, and `sessions`
    simulated sessions (1/k position bias, so θ_1 = 1) summed per (document, position)."""
    rng = np.random.default_rng(seed)
    source = BehaviourSource.objects.create(team=team, name="simulated", kind="csv")
    truth, rows = {}, []
    for number in range(keywords):
        keyword = f"query {number}"
        grades = rng.integers(0, 4, documents)
        relevance = np.array([TRUE_RELEVANCE[int(g)] for g in grades])
        found = simulate_query(rng, relevance, sessions=sessions, model=model,
                               session_noise=0.3)
        shown, clicked = document_position_counts(found, documents)
        for doc in range(documents):
            truth[(keyword, f"d{doc}")] = int(grades[doc])
            for position in np.flatnonzero(shown[doc]):
                rows.append(BehaviourCount(
                    source=source, keyword=keyword, doc_id=f"d{doc}",
                    position=int(position) + 1, impressions=int(shown[doc, position]),
                    clicks=int(clicked[doc, position])))
    BehaviourCount.objects.bulk_create(rows)
    return Simulated(source=source, truth=truth)


def evaluation_of(team: Team, simulated: Simulated, *, extra_docs: dict[str, list[str]]
                  | None = None, **fields) -> Evaluation:
    """An evaluation of the simulated keywords and documents (plus `extra_docs` the
    behaviour never saw), graded scale, one slot per result, no metric."""
    keywords: dict[str, list[str]] = {}
    for keyword, doc in simulated.truth:
        keywords.setdefault(keyword, []).append(doc)
    for keyword, docs in (extra_docs or {}).items():
        keywords[keyword].extend(docs)
    return build_evaluation(team=team, keywords=keywords, metrics=fields.pop("metrics", []),
                            **fields)


def keyword_text(snapshot) -> str:
    return Keyword.objects.get(pk=snapshot.keyword_id).normalized_text
