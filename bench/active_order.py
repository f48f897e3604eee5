"""Benchmark of the decisive grading order (Evaluation.grading_order).

(a) Claim throughput on PostgreSQL: two copies of one evaluation (N keywords x 10 results x
    3 slots, 30 % graded at random, ndcg@10 first of 3 metrics, bounds stored by
    recompute_metrics), one handing out in position order, one decisive; one grader claims
    the next slot (judgments' one SKIP LOCKED claim, slot_claim_next_assigned) and the slot
    is then filled by a plain UPDATE (untimed), rounds alternated; medians of claims/s and
    their ratio (target: decisive within 10 % of position order). One grader gives every
    grade, so each claim passes over the free slots of results they already hold one of:
    both orders' figures depend on how the claim excludes those (docs/ARCHITECTURE.md,
    The grading queue, has the figures and what dominates them).
(b) The simulation, in pure metrics_engine (no database): two rankings (A, B) of the same
    keywords (20 x 10 results) with hidden true grades (seeded, synthetic: B's results a
    little likelier relevant), grading budgets of 30, 50 and 70 % of each
    ranking's slots, 20 seeds. Each step grades, with its true grade, the next result the
    order hands out and recomputes that keyword's nDCG@10 bounds (core.keyword_bounds); the
    two rankings take turns, each with its own queue; the decisive order mirrors the
    claim's key, width / ln(position + 1), ties in position order. At the end: is the sign
    of mean nDCG@10(B) - mean nDCG@10(A), as the app shows the means (graded results
    only), right; is it decided (core.bounds_decision of the means' bounds, core.bounds_mean);
    and how wide the bounds of the difference still are. Slower (minutes): pure Python.

    .venv/bin/python bench/active_order.py [--keywords 2000] [--rounds 5] [--claims 200]
    .venv/bin/python bench/active_order.py --simulation-only    # or --throughput-only

(a) creates (and drops) the database `searchtweak_bench_active_order` on the local
PostgreSQL. Figures print as tables; nothing is asserted.
"""

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import metrics_engine as core

# --- (b) the simulation ---

def true_grades(rng: np.random.Generator, keywords: int, depth: int, edge: float) -> tuple:
    """Hidden graded (0..3) truth of two engines' top `depth` per keyword: B is A with an
    edge in each result's relevance probability, so the nDCG@10 difference is real."""
    quality = rng.beta(2, 3, size=keywords)  # how easy each keyword is
    def engine(edge: float) -> np.ndarray:
        decay = np.linspace(1.0, 0.4, depth)  # better results near the top
        p = np.clip(quality[:, None] * decay[None, :] + edge, 0, 1)
        return rng.binomial(3, p).astype(float)
    return engine(0.0), engine(edge)


def simulate(grades: dict[str, np.ndarray], *, budget: float, decisive: bool,
             k: int = 10) -> tuple[int, float | None, float]:
    """Grade `budget` of each ranking's slots in one order, one grade of each ranking in
    turn (two evaluations, each with its own queue). Returns the decision of the two means'
    bounds (core.bounds_decision: +1 B better, -1 A better, 0 open) and the difference of
    the means of the values as the app shows them (graded results only): B - A, and how
    wide the bounds of that difference still are."""
    names = list(grades)
    keywords, depth = grades[names[0]].shape
    known = {name: np.full((keywords, depth), np.nan) for name in names}
    bounds = {name: [core.KeywordBounds(0.0, 1.0, True)] * keywords for name in names}
    discount = 1.0 / np.log(np.arange(depth) + 2.0)  # ln(position + 1), positions 1..depth
    discount[k:] = 0.0
    positional = [(keyword, position) for keyword in range(keywords)
                  for position in range(depth)]

    def results(name: str, keyword: int) -> list[list[float | None]]:
        return [[None if math.isnan(g) else float(g)] for g in known[name][keyword]]

    for step in range(int(budget * keywords * depth) * len(names)):
        name = names[step % len(names)]
        if decisive:
            width = np.array([b.upper - b.lower for b in bounds[name]])
            keys = np.where(np.isnan(known[name]), width[:, None] * discount[None, :], -1.0)
            # argmax takes the first of equal keys: keyword, then position order, as the
            # claim's ORDER BY breaks ties.
            keyword, position = divmod(int(np.argmax(keys)), depth)
        else:
            keyword, position = positional[step // len(names)]
        known[name][keyword, position] = grades[name][keyword, position]
        bounds[name][keyword] = core.keyword_bounds("ndcg", results(name, keyword), k=k,
                                                    scale="graded")
    means = {}
    for name in names:
        values = [core.evaluate_keyword("ndcg", results(name, keyword), k=k, scale="graded")
                  for keyword in range(keywords)]
        values = [v for v in values if v is not None]
        means[name] = float(np.mean(values)) if values else None
    a, b = names
    mean_a, mean_b = core.bounds_mean(bounds[a]), core.bounds_mean(bounds[b])
    decision = core.bounds_decision(mean_a, mean_b)
    shown = None if None in means.values() else means[b] - means[a]
    return decision, shown, (mean_b.upper - mean_a.lower) - (mean_b.lower - mean_a.upper)


def run_simulation(*, keywords: int, seeds: int, budget: float, edge: float,
                   depth: int = 10) -> None:
    # sign right, decided, decided wrongly, summed width of the difference's bounds
    tally = {False: [0, 0, 0, 0.0], True: [0, 0, 0, 0.0]}
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        a, b = true_grades(rng, keywords, depth, edge)

        def mean_ndcg(grades: np.ndarray) -> float:
            return float(np.mean([core.evaluate_keyword(
                "ndcg", [[float(g)] for g in row], k=10, scale="graded") for row in grades]))

        truth = np.sign(mean_ndcg(b) - mean_ndcg(a))
        for decisive in (False, True):
            decision, shown, width = simulate({"A": a, "B": b}, budget=budget,
                                              decisive=decisive)
            tally[decisive][3] += width
            tally[decisive][0] += bool(shown is not None and np.sign(shown) == truth)
            tally[decisive][1] += decision != 0
            tally[decisive][2] += decision != 0 and decision != truth
    print(f"\nsimulation: {keywords} keywords x {depth} results, rankings A and B with "
          f"hidden graded truth (B's edge {edge}), nDCG@10, budget {budget:.0%} of each "
          f"one's slots, {seeds} seeds")
    print(f"{'order':<10} {'sign right':>11} {'decided':>8} {'decided wrong':>14} "
          f"{'mean width of the difference bounds':>36}")
    for decisive in (False, True):
        right, decided, wrong, width = tally[decisive]
        print(f"{'decisive' if decisive else 'position':<10} {right:>8}/{seeds} "
              f"{decided:>5}/{seeds} {wrong:>11}/{seeds} {width / seeds:>36.3f}")


# --- (a) claim throughput ---

def run_claims(*, keywords: int, rounds: int, claims: int) -> None:
    from _support import (
        bench_database,
        database_url,
        drop_database,
        recreate_database,
        seed_evaluation,
        setup_django,
    )

    db_name = bench_database("active_order")
    env = {"DATABASE_URL": database_url(db_name), "DEBUG": "false", "SECRET_KEY": "bench-only",
           "CELERY_TASK_ALWAYS_EAGER": "false"}
    recreate_database(db_name, env)
    setup_django(env)
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from evaluations.models import Evaluation
    from judgments.models import FeedbackSlot
    from judgments.queue import slot_claim_next_assigned
    from searchtweak.models import Membership, Role, Team, User

    metrics = [("ndcg", 10, {}), ("precision", 10, {}), ("err", 10, {})]
    try:
        team = Team.objects.create(name="Bench")
        users = [User.objects.create(username=f"bench{i}") for i in range(4)]
        for user in users:
            Membership.objects.create(team=team, user=user, role=Role.GRADER)
        evaluations = {}
        for order in Evaluation.GradingOrder.values:
            print(f"seeding {keywords} keywords x 10 results x 3 slots, 30 % graded "
                  f"({order}) ...", flush=True)
            evaluation = seed_evaluation(keywords, team=team, graders=users[:3], name=order,
                                         graded_fraction=0.3, metrics=metrics)
            Evaluation.objects.filter(pk=evaluation.pk).update(grading_order=order)
            call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet")
            evaluations[order] = evaluation.pk
        with connection.cursor() as cursor:  # as autovacuum would, before a real queue
            cursor.execute("ANALYZE")
        claimer = users[3]

        def claim_round(order: str) -> float:
            evaluation_id = evaluations[order]
            decisive = [evaluation_id] if order == "decisive" else []
            spent = 0.0
            for _ in range(claims):
                started = time.perf_counter()
                slot = slot_claim_next_assigned(user=claimer, evaluation_ids=[evaluation_id],
                                                decisive_ids=decisive)
                spent += time.perf_counter() - started
                FeedbackSlot.objects.filter(pk=slot["id"]).update(
                    grade=1, graded_at=timezone.now(), graded_by=claimer)
            return claims / spent

        for order in evaluations:  # warm-up
            claim_round(order)
        rates = {order: [] for order in evaluations}
        for round_number in range(rounds):
            orders = list(evaluations)
            for order in (orders if round_number % 2 else orders[::-1]):
                rates[order].append(claim_round(order))
    finally:
        drop_database(db_name)
    position, decisive = (statistics.median(rates[o]) for o in ("position", "decisive"))
    print(f"\nclaims/s, one grader, {keywords} keywords x 10 x 3 slots "
          f"(medians of {rounds} rounds of {claims} claims, alternated)")
    print(f"{'position':>10} {'decisive':>10} {'ratio':>6}")
    print(f"{position:>10.0f} {decisive:>10.0f} {decisive / position:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keywords", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--sim-keywords", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=float, nargs="+", default=[0.3, 0.5, 0.7],
                        help="shares of the slots graded")
    parser.add_argument("--edge", type=float, default=0.3,
                        help="B's edge over A in each result's relevance probability")
    parser.add_argument("--simulation-only", action="store_true")
    parser.add_argument("--throughput-only", action="store_true")
    args = parser.parse_args()
    if not args.simulation_only:
        run_claims(keywords=args.keywords, rounds=args.rounds, claims=args.claims)
    if not args.throughput_only:
        for budget in args.budget:
            run_simulation(keywords=args.sim_keywords, seeds=args.seeds, budget=budget,
                           edge=args.edge)


if __name__ == "__main__":
    main()
