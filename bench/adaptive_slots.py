"""Benchmark of adaptive slots (strategy "1 → 3") against always-3.

A simulated demo on the app itself (a throw-away PostgreSQL database, the real queue, the
real grade writer and the eager recompute, so the bounds condition reads stored bounds as
in production): per seed, N keywords x 10 results with hidden true grades on the graded
scale (0..3, seeded; results likelier relevant near the top), and five simulated graders,
each seeing the true grade plus rounded normal noise (sigma 0.7, clipped to 0..3) and
marking a grade unsure with probability 8 % (35 % when their grade is off the truth). A
grader's grade of a result is drawn from (seed, grader, keyword, position), so both
evaluations get the same grade from the same grader on the same result. Two evaluations of
the same results, metrics ndcg@10 (first: the one the bounds condition reads),
precision@10, ap@10: one strategy 3, one strategy 13. The graders take turns: each claims
the next slot the queue hands them (slot_claim_next) and grades it (feedback_submit), until
no grader gets one. No judge takes part, so the judge-person condition never fires here.

Printed per seed and in total: slots graded; Fleiss' kappa (metrics_engine.statistics, over
the results with three grades: all of always-3's, the opened ones of 1 → 3, and always-3's
on those same results); per metric, the mean over keywords under each strategy and on the
hidden truth, the keywords whose value is equal under both, the largest difference, and
whether every 1 → 3 value lies within always-3's bounds (after a complete grading they are
its value: then equal) and within the bounds 1 → 3 stores itself.

    .venv/bin/python bench/adaptive_slots.py [--keywords 20] [--seeds 1 2 3] [--wide-bounds 0.5]

Creates (and drops) the database `<BENCH_DATABASE_PREFIX>_adaptive_slots` on the local
PostgreSQL (see bench/_support.py). Nothing is asserted.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

RESULTS = 10
GRADERS = 5
NOISE_SIGMA = 0.7
UNSURE_RATE, UNSURE_RATE_WHEN_OFF = 0.08, 0.35
METRICS = [("ndcg", 10, {}), ("precision", 10, {}), ("ap", 10, {})]


def true_grades(seed: int, keywords: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 0])
    quality = rng.beta(2, 3, size=keywords)
    decay = np.linspace(1.0, 0.4, RESULTS)
    return rng.binomial(3, np.clip(quality[:, None] * decay[None, :], 0, 1))


def graders_view(seed: int, grader: int, keyword: int, position: int, truth: int
                 ) -> tuple[int, bool]:
    """What this grader answers on this result: the same in both evaluations."""
    rng = np.random.default_rng([seed, 1, grader, keyword, position])
    grade = int(np.clip(round(truth + rng.normal(0, NOISE_SIGMA)), 0, 3))
    unsure = rng.random() < (UNSURE_RATE_WHEN_OFF if grade != truth else UNSURE_RATE)
    return grade, unsure


def build(team, name: str, strategy: int, keywords: int):

    from _support import active_evaluation

    from evaluations.models import (
        EvaluationMetric,
        Keyword,
        Snapshot,
    )
    from judgments.slots import slots_create_for_snapshots

    evaluation = active_evaluation(team=team, name=name, strategy=strategy)
    for position, (code, k, params) in enumerate(METRICS):
        EvaluationMetric.objects.create(evaluation=evaluation, code=code, k=k, params=params,
                                        position=position)
    for n in range(keywords):
        keyword = Keyword.objects.create(evaluation=evaluation, position=n + 1,
                                         text=f"{name} query {n}",
                                         normalized_text=f"{name} query {n}",
                                         fetch_status="fetched")
        snapshots = Snapshot.objects.bulk_create(
            Snapshot(keyword=keyword, position=p, doc_id=f"{name}-{n}-{p}", name=f"Doc {p}")
            for p in range(1, RESULTS + 1))
        slots_create_for_snapshots(evaluation=evaluation, keyword=keyword, snapshots=snapshots)
    return evaluation


def grade_all(evaluation, graders, seed: int, truth: np.ndarray) -> int:
    """The graders take turns claiming and grading until the queue is empty; grades."""
    from judgments.grading import feedback_submit
    from judgments.queue import slot_claim_next

    graded = 0
    while True:
        progress = False
        for number, grader in enumerate(graders):
            slot = slot_claim_next(user=grader, team=evaluation.team,
                                   evaluation=evaluation)
            if slot is None:
                continue
            keyword, position = slot.keyword_position - 1, slot.position - 1
            grade, unsure = graders_view(seed, number, keyword, position,
                                         int(truth[keyword, position]))
            feedback_submit(user=grader, slot_id=slot.pk, grade=grade, unsure=unsure)
            graded += 1
            progress = True
        if not progress:
            return graded


def result_grades(evaluation) -> dict[tuple[int, int], list[int | None]]:
    from judgments.models import FeedbackSlot

    grades: dict[tuple[int, int], list[int | None]] = {}
    for kw, pos, grade in (FeedbackSlot.objects.filter(evaluation=evaluation)
                           .order_by("keyword_position", "position", "index")
                           .values_list("keyword_position", "position", "grade")):
        grades.setdefault((kw, pos), []).append(grade)
    return grades


def stored(evaluation) -> dict[str, dict[int, tuple]]:
    from metrics.models import KeywordMetricValue

    values: dict[str, dict[int, tuple]] = {}
    for code, kw, value, lower, upper in (
            KeywordMetricValue.objects.filter(keyword__evaluation=evaluation)
            .values_list("metric__code", "keyword__position", "value", "lower", "upper")):
        values.setdefault(code, {})[kw] = (value, lower, upper)
    return values


def within(value, lower, upper, tol: float = 1e-9) -> bool:
    if value is None:
        return lower is None
    return lower is not None and lower - tol <= value <= upper + tol


def mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def run(keywords: int, seeds: list[int], wide_bounds: float | None) -> None:
    from _support import (
        bench_database,
        database_url,
        drop_database,
        recreate_database,
        setup_django,
    )

    db_name = bench_database("adaptive_slots")
    env = {"DATABASE_URL": database_url(db_name), "DEBUG": "false", "SECRET_KEY": "bench-only"}
    recreate_database(db_name, env)
    setup_django(env)
    import logging

    logging.getLogger("celery").setLevel(logging.WARNING)
    from judgments import adaptive

    if wide_bounds is not None:
        adaptive.WIDE_BOUNDS = wide_bounds
    print(f"seeds {seeds}, noise sigma {NOISE_SIGMA}, unsure {UNSURE_RATE:.0%} "
          f"({UNSURE_RATE_WHEN_OFF:.0%} when off the truth), wide bounds above "
          f"{adaptive.WIDE_BOUNDS}", flush=True)
    from django.core.management import call_command

    from metrics_engine import evaluate_batch
    from metrics_engine.statistics import fleiss_kappa
    from searchtweak.models import Membership, Role, Team, User

    try:
        team = Team.objects.create(name="Bench")
        graders = [User.objects.create(username=f"grader{i}") for i in range(GRADERS)]
        for user in graders:
            Membership.objects.create(team=team, user=user, role=Role.GRADER)
        rows = []
        for seed in seeds:
            truth = true_grades(seed, keywords)
            print(f"seed {seed}: {keywords} keywords x {RESULTS} results, {GRADERS} graders",
                  flush=True)
            runs = {}
            for label, strategy in (("always-3", 3), ("1 -> 3", 13)):
                started = time.perf_counter()
                evaluation = build(team, f"s{seed}-{strategy}", strategy, keywords)
                spent = grade_all(evaluation, graders, seed, truth)
                # The eager recomputes ran after each grade; one full rebuild to be sure
                # the stored values are what the grades give.
                call_command("recompute_metrics", "--evaluation", str(evaluation.pk),
                             "--quiet")
                runs[label] = (evaluation, spent, result_grades(evaluation), stored(evaluation))
                print(f"  {label:<9} {spent:>5} slots graded in "
                      f"{time.perf_counter() - started:.1f} s", flush=True)
            (_, spent3, grades3, values3) = runs["always-3"]
            (evaluation13, spent13, grades13, values13) = runs["1 -> 3"]
            opened = [key for key, grades in grades13.items() if len(grades) == 3]
            second = sum(1 for grades in grades13.values() if len(grades) >= 2)
            reasons = {}
            from judgments.models import FeedbackSlot
            for reason in (FeedbackSlot.objects.filter(evaluation=evaluation13)
                           .exclude(opened_because="")
                           .values_list("opened_because", flat=True)):
                reasons[reason] = reasons.get(reason, 0) + 1
            kappas = (fleiss_kappa(list(grades3.values())),
                      fleiss_kappa([grades13[key] for key in opened]),
                      fleiss_kappa([grades3[key] for key in opened]))
            true_array = truth.astype(float)[:, :, None]
            metric_rows = []
            for code, k, params in METRICS:
                truth_values = evaluate_batch(code, true_array, k=k, scale="graded",
                                              params=params)
                v3, v13 = values3.get(code, {}), values13.get(code, {})
                same = sum(1 for kw in v3 if v3[kw][0] == v13.get(kw, (None,))[0])
                diffs = [abs(v3[kw][0] - v13[kw][0]) for kw in v3
                         if v3[kw][0] is not None and v13.get(kw, (None,))[0] is not None]
                in3 = all(within(v13[kw][0], v3[kw][1], v3[kw][2]) for kw in v13)
                in13 = all(within(*v13[kw]) for kw in v13)
                errors = [mean(abs(v[kw][0] - truth_values[kw - 1]) for kw in v
                               if v[kw][0] is not None) for v in (v3, v13)]
                metric_rows.append((
                    code, mean(v[0] for v in v3.values()), mean(v[0] for v in v13.values()),
                    float(np.nanmean(truth_values)), same, len(v3), max(diffs, default=0.0),
                    in3, in13, errors))
            rows.append((seed, spent3, spent13, (second, len(opened)), reasons, kappas,
                         metric_rows))
        report(rows, keywords)
    finally:
        drop_database(db_name)


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def report(rows, keywords: int) -> None:
    results = keywords * RESULTS
    print()
    print(f"Slots graded ({results} results a seed; always-3 = {3 * results})")
    print(f"{'seed':>5} {'always-3':>9} {'1->3':>6} {'saved':>6} {'2+/3 slots':>11}  "
          f"{'kappa 3':>8} {'kappa 1->3':>10} {'kappa 3 same':>12}  reasons (slots)")
    for seed, spent3, spent13, opened, reasons, kappas, _ in rows:
        text = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
        opened_text = f"{opened[0]}/{opened[1]}"
        print(f"{seed:>5} {spent3:>9} {spent13:>6} {1 - spent13 / spent3:>6.0%} "
              f"{opened_text:>11}  "
              f"{_f(kappas[0]):>8} {_f(kappas[1]):>10} {_f(kappas[2]):>12}  {text}")
    total3 = sum(r[1] for r in rows)
    total13 = sum(r[2] for r in rows)
    print(f"{'all':>5} {total3:>9} {total13:>6} {1 - total13 / total3:>6.0%}")
    print()
    print("Metric means and per-keyword values (1->3 against always-3)")
    print(f"{'seed':>5} {'metric':<10} {'always-3':>9} {'1->3':>7} {'truth':>7} "
          f"{'equal kw':>9} {'max |d|':>8} {'in 3 bounds':>12} {'in own bounds':>14} "
          f"{'|err| 3':>8} {'|err| 1->3':>10}")
    for seed, *_, metric_rows in rows:
        for code, m3, m13, mt, same, n, max_diff, in3, in13, errors in metric_rows:
            print(f"{seed:>5} {code:<10} {_f(m3):>9} {_f(m13):>7} {_f(mt):>7} "
                  f"{same:>4}/{n:<4} {max_diff:>8.3f} {in3!s:>12} {in13!s:>14} "
                  f"{_f(errors[0]):>8} {_f(errors[1]):>10}")
    print("in 3 bounds: always-3 is graded completely, so its bounds are its value and this"
          " says 'equal'; |err|: mean over keywords of |value - value on the hidden truth|.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keywords", type=int, default=20)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--wide-bounds", type=float, default=None,
                        help="judgments.adaptive.WIDE_BOUNDS for this run (default: as set)")
    args = parser.parse_args()
    run(args.keywords, args.seeds, args.wide_bounds)


if __name__ == "__main__":
    main()
