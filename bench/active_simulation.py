"""Simulation of the decisive grading order on the demo: does grading "what
decides first" settle which of two demo models is better, where position order does not?

The demo catalog and its two rankings (evaluations.demo: "relevance", the demo's BM25
model, as A; "cheap-first" as B) answer a sample of the demo's keywords (seed_demo's
DEMO_KEYWORDS). Each (keyword, document) has a hidden true grade: the demo's own relevance
(evaluations.demo.relevance, 0..3) moved one step up or down with probability --noise
(seeded), the same document of a keyword having the same truth on both sides. Per seed the
two models become two active evaluations of one team (graded scale, 1 grader per result,
nDCG@10 their first metric, values and bounds stored by recompute_metrics as after a
fetch), and one simulated grader, who answers the truth, grades --budget of each one's
slots, A and B in turn, through the app itself: judgments' claim (slot_claim_next: the one
SKIP LOCKED statement, in the evaluation's grading order) and grade (feedback_submit, whose
recompute runs eagerly after commit, so the next claim reads the narrowed bounds). Orders:

  position            keyword, then position order (today's default)
  decisive            grading_order "decisive": width of the keyword's nDCG@10 bounds x
                      rank discount (metrics.queue_order)
  decisive+baseline   the same with A as the team's baseline, so B's queue weighs its
                      results by Minimal Test Collections' |discount here - discount in A|

At the end, per seed and order: the shown difference of the means (stored nDCG@10 values,
graded results only, as the dashboard shows them) B - A; "right": its sign is the sign of
the true difference (every result graded with its truth); "decided": the means' bounds do
not overlap (metrics.selectors.stored_bounds_mean, core.bounds_decision, as Compare says
it), and whether a decision was wrong (never, if bounds are sound).

    .venv/bin/python bench/active_simulation.py [--seeds 20] [--budget 0.3] [--keywords 20]
    .venv/bin/python bench/active_simulation.py --until-decided --budget 1.0

--until-decided grades each seed until the bounds decide (checked every CHECK_EVERY grades,
at most --budget of the slots) and prints the share of the slots each order needed: where
no order decides within 30 %, how much sooner the decisive order gets there.

A throw-away SQLite file (no PostgreSQL, no server): runs on a fresh clone in a few
minutes. Figures print as a table; nothing is asserted.
"""

import argparse
import io
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ORDERS = ("position", "decisive", "decisive+baseline")
# With --until-decided, how many grades apart the bounds are checked for a decision.
CHECK_EVERY = 4


def setup(database: Path) -> None:
    os.environ.update({"DATABASE_URL": f"sqlite:///{database}", "DEBUG": "false",
                       "SECRET_KEY": "bench-only", "DJANGO_SETTINGS_MODULE":
                       "searchtweak.settings"})
    os.environ.pop("CELERY_BROKER_URL", None)  # eager tasks: each grade's recompute runs
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def demo_results(keywords: list[str]) -> dict[str, dict[str, list]]:
    """{ranking: {keyword: [product, ...]}}: the demo engine's top 10 for each keyword."""
    from evaluations import demo
    from evaluations.models import DemoProduct

    demo.catalog_ensure()
    products = {p.sku: p for p in DemoProduct.objects.all()}
    return {ranking: {text: [products[hit["id"]] for hit in demo.search(
        text, size=10, ranking=ranking)["hits"]] for text in keywords}
        for ranking in ("relevance", "cheap-first")}


def hidden_truth(rng, results, keywords: list[str], noise: float) -> dict[tuple, int]:
    from evaluations import demo

    truth = {}
    for text in keywords:
        for ranking in results.values():
            for product in ranking[text]:
                if (text, product.sku) not in truth:
                    step = rng.choice([-1, 1]) if rng.random() < noise else 0
                    truth[text, product.sku] = int(min(3, max(0, demo.relevance(
                        text, product) + step)))
    return truth


def true_mean_ndcg(results: dict[str, list], truth: dict, keywords: list[str]) -> float:
    import metrics_engine as core

    values = [core.evaluate_keyword("ndcg", [[float(truth[text, p.sku])] for p in
                                             results[text]], k=10, scale="graded")
              for text in keywords]
    values = [v for v in values if v is not None]
    return sum(values) / len(values)


def create_evaluation(*, team, name: str, results: dict[str, list], keywords: list[str],
                      order: str):
    """An active evaluation of the ranking's results, values and bounds stored."""
    from _support import active_evaluation
    from django.core.management import call_command

    from evaluations.models import (
        EvaluationMetric,
        Keyword,
        Snapshot,
    )
    from judgments.slots import slots_create_for_snapshots

    evaluation = active_evaluation(
        team=team, name=name, strategy=1,
        grading_order=("decisive" if order.startswith("decisive") else "position"))
    EvaluationMetric.objects.create(evaluation=evaluation, code="ndcg", k=10, position=0)
    for position, text in enumerate(keywords, start=1):
        keyword = Keyword.objects.create(evaluation=evaluation, position=position, text=text,
                                         normalized_text=Keyword.normalize(text),
                                         fetch_status="fetched")
        snapshots = Snapshot.objects.bulk_create(
            Snapshot(keyword=keyword, position=rank, doc_id=product.sku, name=product.title)
            for rank, product in enumerate(results[text], start=1))
        slots_create_for_snapshots(evaluation=evaluation, keyword=keyword, snapshots=snapshots)
    call_command("recompute_metrics", "--evaluation", str(evaluation.pk), "--quiet",
                 stdout=io.StringIO())
    return evaluation


def outcome(a, b) -> tuple[float | None, int, float]:
    """(shown mean B - mean A, the bounds' decision, width of the difference's bounds)."""
    import metrics_engine as core
    from metrics.models import KeywordMetricValue
    from metrics.selectors import stored_bounds_mean

    means, bounds = [], []
    for evaluation in (a, b):
        rows = KeywordMetricValue.objects.filter(keyword__evaluation=evaluation).values_list(
            "keyword_id", "value", "lower", "upper", "bounds_exact")
        values = [value for _, value, *_ in rows if value is not None]
        means.append(math.fsum(values) / len(values) if values else None)
        stored = {pk: core.KeywordBounds(lower, upper, exact)
                  for pk, _, lower, upper, exact in rows}
        bounds.append(stored_bounds_mean(stored, list(
            evaluation.keywords.values_list("pk", flat=True)))[0])
    shown = None if None in means else means[1] - means[0]
    width = (bounds[1].upper - bounds[0].lower) - (bounds[1].lower - bounds[0].upper)
    return shown, core.bounds_decision(*bounds), width


def run_seed(*, seed: int, results, all_keywords: list[str], keyword_count: int,
             budget: float, noise: float, until_decided: bool = False) -> tuple[float, dict]:
    """The true difference B - A and, per order, outcome() and the share of the slots
    graded; `until_decided`: grading stops at the first check (every CHECK_EVERY grades)
    where the bounds decide, `budget` then the most it may spend."""
    import numpy as np

    from judgments.grading import feedback_submit
    from judgments.queue import slot_claim_next
    from metrics.models import TeamBaseline
    from searchtweak.models import Membership, Role, Team, User

    rng = np.random.default_rng(seed)
    keywords = [all_keywords[i] for i in sorted(rng.choice(len(all_keywords), keyword_count,
                                                           replace=False))]
    truth = hidden_truth(rng, results, keywords, noise)
    true_difference = (true_mean_ndcg(results["cheap-first"], truth, keywords)
                       - true_mean_ndcg(results["relevance"], truth, keywords))
    by_order = {}
    for order in ORDERS:
        team = Team.objects.create(name=f"seed {seed} {order} {budget}")
        grader = User.objects.create(username=f"grader-{seed}-{order}-{budget}")
        Membership.objects.create(team=team, user=grader, role=Role.GRADER)
        a, b = (create_evaluation(team=team, name=f"{name} {seed} {order}",
                                  results=results[ranking], keywords=keywords, order=order)
                for name, ranking in (("A", "relevance"), ("B", "cheap-first")))
        if order == "decisive+baseline":
            TeamBaseline.objects.create(team=team, evaluation=a)
        slots = {e.pk: e.slots.count() for e in (a, b)}
        graded = 0
        for step in range(max(round(budget * n) for n in slots.values()) * 2):
            evaluation = (a, b)[step % 2]
            if step // 2 >= round(budget * slots[evaluation.pk]):
                continue
            slot = slot_claim_next(user=grader, team=team, evaluation=evaluation)
            if slot is None:
                continue
            feedback_submit(user=grader, slot_id=slot.pk,
                            grade=truth[slot.keyword.text, slot.snapshot.doc_id])
            graded += 1
            if until_decided and graded % CHECK_EVERY == 0 and outcome(a, b)[1] != 0:
                break
        by_order[order] = (*outcome(a, b), graded / sum(slots.values()))
    return true_difference, by_order


def simulate(args, results, keywords: list[str], budget: float) -> None:
    started = time.perf_counter()
    print(f"demo: {args.keywords} of {len(keywords)} keywords per seed, top 10 of "
          f"A = relevance, B = cheap-first; hidden truth: the demo's relevance, "
          f"{args.noise:.0%} one step off; nDCG@10; budget {budget:.0%} of each "
          f"evaluation's slots; {args.seeds} seeds")
    header = f"{'seed':>4} {'true B-A':>9}" + "".join(
        f" | {order + ': shown, right, decided':>38}" for order in ORDERS)
    print(header)
    tally = {order: [0, 0, 0, 0.0] for order in ORDERS}  # right, decided, wrong, width
    shares = {order: [] for order in ORDERS}  # share of the slots graded, where decided
    for seed in range(args.seeds):
        truth, by_order = run_seed(seed=seed, results=results, all_keywords=keywords,
                                   keyword_count=args.keywords, budget=budget,
                                   noise=args.noise, until_decided=args.until_decided)
        cells = []
        for order in ORDERS:
            shown, decision, width, share = by_order[order]
            if decision != 0:
                shares[order].append(share)
            right = shown is not None and math.copysign(1, shown) == math.copysign(1, truth)
            decided = decision != 0
            wrong = decided and decision != math.copysign(1, truth)
            tally[order][0] += right
            tally[order][1] += decided
            tally[order][2] += wrong
            tally[order][3] += width
            mark = "WRONG" if wrong else "yes" if decided else "no"
            cells.append(f" | {shown:>+20.3f} {'yes' if right else 'no':>6} {mark:>10}")
        print(f"{seed:>4} {truth:>+9.3f}" + "".join(cells)
              + f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    print(f"\n{'order':<18} {'sign right':>10} {'decided':>8} {'decided wrong':>14} "
          f"{'mean width of the B-A bounds':>29}")
    for order in ORDERS:
        right, decided, wrong, width = tally[order]
        print(f"{order:<18} {right:>7}/{args.seeds} {decided:>5}/{args.seeds} "
              f"{wrong:>11}/{args.seeds} {width / args.seeds:>29.3f}")
    if args.until_decided:
        print(f"\nshare of the slots graded when the bounds first decided (checked every "
              f"{CHECK_EVERY} grades; at most {budget:.0%}), over the seeds that decided")
        print(f"{'order':<18} {'decided':>8} {'median':>7} {'min':>6} {'max':>6}")
        for order in ORDERS:
            done = shares[order]
            figures = (f"{statistics.median(done):>7.0%} {min(done):>6.0%} {max(done):>6.0%}"
                       if done else f"{'-':>7} {'-':>6} {'-':>6}")
            print(f"{order:<18} {len(done):>5}/{args.seeds} {figures}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=float, nargs="+", default=[0.3],
                        help="shares of each evaluation's slots graded (default 0.3)")
    parser.add_argument("--keywords", type=int, default=20,
                        help="demo keywords sampled per seed (of 50)")
    parser.add_argument("--until-decided", action="store_true",
                        help="grade each seed until its bounds decide (at most --budget) "
                             "and print how much of the slots that took")
    parser.add_argument("--noise", type=float, default=0.25,
                        help="chance a hidden true grade is one step off the demo's relevance")
    args = parser.parse_args()
    started = time.perf_counter()
    # In memory where the system has a tmpfs: each grade commits, and a disk's fsyncs would
    # be most of the time.
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as directory:
        setup(Path(directory) / "simulation.sqlite3")
        from evaluations.management.commands.seed_demo import DEMO_KEYWORDS

        results = demo_results(DEMO_KEYWORDS)
        print(f"(set up in {time.perf_counter() - started:.0f} s)")
        for budget in args.budget:
            simulate(args, results, DEMO_KEYWORDS, budget)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
