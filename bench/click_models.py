"""How well click models recover relevance from simulated clicks (behaviour.core).

    .venv/bin/python bench/click_models.py [--queries 200] [--sessions 10000] [--seed 7]
                                           [--model pbm|cascade] [--min-impressions 10]

Each query has `--documents` documents whose true relevance (attractiveness) is drawn
uniformly from [0.05, 0.95], all distinct. behaviour.core.simulate shows them to
`--sessions` users through a ranker that is noisy per query (sd 0.2) and moves a little per
session (sd 0.1), under a 1/k position bias, and records their clicks (PBM by default; the
cascade with --model cascade). Per query the counts are summed per (document, position);
raw CTR, COEC and PBM by EM (behaviour.core.click_models) score every pair from them, and
each query's Kendall τ-b between the scores and the true relevance
(metrics_engine.agreement.kendall_tau) is averaged over the queries. The true order is
strict, so τ is 1 exactly when a model orders a query's documents as the truth does.

Printed: mean τ per model, its spread over queries, and seconds (simulation, each fit).
The capability asks PBM for τ ≥ 0.8 at 200 queries x 10,000 sessions, beating raw CTR.

Then the calibration figure a clicks grader would show (behaviour.learning): each pair's
true grade on the graded scale 0..3 is its true relevance cut evenly (behaviour.core.learned:
[0, .25) → 0 … [.75, 1] → 3), its learned grade the model's learned relevance (estimated
CTR at position 1) cut the same way; printed per model: pairs graded, exact match, and
Cohen's κ, quadratic-weighted as the calibration page weighs a four-grade scale
(metrics_engine.agreement), with the confusion matrix (rows: true, columns: learned).
Pure numpy, no database: seconds on a laptop.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from behaviour.core.click_models import ClickCounts, coec, pbm_fit, raw_ctr
from behaviour.core.learned import grades_from_relevance, learned_relevance
from behaviour.core.simulate import document_position_counts, simulate_query
from metrics_engine.agreement import confusion_matrix, kendall_tau, weighted_kappa


def simulated_counts(*, queries: int, documents: int, sessions: int, seed: int, model: str
                     ) -> tuple[ClickCounts, np.ndarray]:
    """The counts of every query (pair = query · documents + document) and the truth."""
    rng = np.random.default_rng(seed)
    impressions, clicks, truth = [], [], []
    for _ in range(queries):
        relevance = rng.uniform(0.05, 0.95, documents)
        found = simulate_query(rng, relevance, sessions=sessions, model=model)
        shown, clicked = document_position_counts(found, documents)
        impressions.append(shown)
        clicks.append(clicked)
        truth.append(relevance)
    return (ClickCounts.from_matrices(np.vstack(impressions), np.vstack(clicks)),
            np.concatenate(truth))


def per_query_tau(scores: np.ndarray, truth: np.ndarray, documents: int) -> np.ndarray:
    taus = []
    for start in range(0, truth.size, documents):
        part = slice(start, start + documents)
        kept = ~np.isnan(scores[part])
        tau = kendall_tau(scores[part][kept], truth[part][kept]) if kept.sum() > 1 else None
        taus.append(np.nan if tau is None else tau)
    return np.array(taus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--documents", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--model", choices=["pbm", "cascade"], default="pbm")
    parser.add_argument("--min-impressions", type=int, default=10)
    args = parser.parse_args()

    started = time.perf_counter()
    counts, truth = simulated_counts(queries=args.queries, documents=args.documents,
                                     sessions=args.sessions, seed=args.seed, model=args.model)
    simulated = time.perf_counter() - started
    print(f"{args.queries} queries x {args.sessions} sessions x {args.documents} documents, "
          f"{args.model} clicks, seed {args.seed}: simulated in {simulated:.2f} s")
    print(f"{'model':<8} {'mean tau':>9} {'min':>6} {'p10':>6} {'seconds':>8}  notes")
    fits = [("raw CTR", lambda: (raw_ctr(counts, min_impressions=args.min_impressions), "")),
            ("COEC", lambda: (coec(counts, min_impressions=args.min_impressions), ""))]

    def pbm():
        fit = pbm_fit(counts, min_impressions=args.min_impressions)
        theta = " ".join(f"{t:.2f}" for t in fit.examination[:5])
        return fit.attractiveness, (f"{fit.iterations} iterations, converged "
                                    f"{fit.converged}; theta 1..5 = {theta}")

    fits.append(("PBM", pbm))
    for name, fit in fits:
        started = time.perf_counter()
        scores, notes = fit()
        seconds = time.perf_counter() - started
        taus = per_query_tau(scores, truth, args.documents)
        print(f"{name:<8} {np.nanmean(taus):>9.3f} {np.nanmin(taus):>6.3f} "
              f"{np.nanpercentile(taus, 10):>6.3f} {seconds:>8.3f}  {notes}")
    calibration(counts, truth, min_impressions=args.min_impressions)


def calibration(counts: ClickCounts, truth: np.ndarray, *, min_impressions: int) -> None:
    """Learned grades against the true ones on the graded scale 0..3 (see the docstring)."""
    true_grades = grades_from_relevance(truth, lo=0, hi=3)
    grades = list(range(4))
    print("\ncalibration against the true grades (graded 0..3, even cuts)")
    print(f"{'model':<8} {'graded':>7} {'exact':>7} {'kappa_q':>8}  confusion (true x learned)")
    for name, model in (("COEC", "coec"), ("PBM", "pbm")):
        learned = grades_from_relevance(
            learned_relevance(counts, model=model, min_impressions=min_impressions),
            lo=0, hi=3)
        pairs = [(t, g) for t, g in zip(true_grades, learned, strict=True) if g is not None]
        first, second = [t for t, _ in pairs], [g for _, g in pairs]
        exact = sum(t == g for t, g in pairs) / len(pairs) if pairs else float("nan")
        kappa = weighted_kappa(first, second, grades=grades, weighting="quadratic")
        matrix = confusion_matrix(first, second, grades=grades)
        print(f"{name:<8} {len(pairs):>7} {exact:>7.3f} "
              f"{kappa if kappa is not None else float('nan'):>8.3f}  {matrix}")


if __name__ == "__main__":
    main()
