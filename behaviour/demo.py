"""The demo's behaviour log: what the demo shop's shoppers did over the last days,
simulated (behaviour.core.simulate) over the demo evaluation's results, so a lead sees
click-through beside the offline metrics in the first minute of `make run`.

Each demo query gets its day's traffic (the demo query set's weight) on each of DAYS
days. Its results are the demo engine's ten shown to the demo evaluation; a result's
attractiveness follows the demo's own relevance (evaluations.demo.relevance), the same
notion the simulated graders start from, so click-through and the graded metrics broadly
agree and disagree where position bias misleads. Clicks follow the position-based model,
1/k examination. The sums are written directly (the importer's rows, not a UBI file
read back): seeding takes about a second. Seeded once; a second run leaves it.

On that log the demo team has a clicks grader (PBM, behaviour.learning) and one finished
shadow run of it on an evaluation people graded in full, so the judges list shows it and
its calibration page puts the learned grades against the graders' (κ, confusion) with each
result's evidence. Learning the run's 500 results takes a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta

import numpy as np

from behaviour import learning, services
from behaviour.core.simulate import simulate_query
from behaviour.importing import CountRow, SearchesRow
from behaviour.models import BehaviourSource, ClickGrader
from evaluations import demo
from evaluations.models import DemoProduct, Evaluation, Snapshot
from judges import runs
from judges.models import JudgeRun
from searchtweak.models import Team, User

SOURCE_NAME = "Demo: the shop's search log (simulated)"
DAYS = 7
SEED = 51
# The chance that a shopper who reads a result clicks it, by the demo's relevance grade.
ATTRACTIVENESS = {0: 0.03, 1: 0.12, 2: 0.35, 3: 0.7}
# A fiftieth of the demo query set's daily weights (the busiest query ~100 searches a day):
# enough clicks for steady figures, few enough rows (~13,000) to seed in about a second.
TRAFFIC_SHARE = 0.02
GRADER_NAME = "Demo: learned from clicks (PBM)"
# The learned relevance is the estimated click-through at position 1, which the demo's
# shoppers make ATTRACTIVENESS by grade: each cut sits between two grades' chances (about
# their geometric mean), so a result learned near its grade's chance gets that grade.
# Even cuts (.25, .5, .75) would grade nothing 3 here: this shop's shoppers click a
# perfect first result 70 % of the time.
GRADER_CUTS = [0.06, 0.2, 0.5]
GRADER_MIN_IMPRESSIONS = 20


def _keyword_rows(rng: np.random.Generator, keyword: str, docs: list[str],
                  attractiveness: np.ndarray, per_day: int, days: list[date]
                  ) -> tuple[list[CountRow], list[SearchesRow], int]:
    depth = len(docs)
    found = simulate_query(rng, attractiveness, sessions=per_day * len(days), depth=depth,
                           ranker_noise=0.15, session_noise=0.05, dwell_seconds=60.0)
    day_of = np.repeat(np.arange(len(days)), per_day)
    positions = np.broadcast_to(np.arange(depth), found.rankings.shape)
    cells = ((day_of[:, None] * depth + found.rankings) * depth + positions).ravel()
    size = len(days) * depth * depth
    shown = np.bincount(cells, minlength=size)
    clicks = np.bincount(cells, weights=found.clicks.ravel(), minlength=size)
    dwell = np.nan_to_num(found.dwell_seconds.ravel())
    dwell_sum = np.bincount(cells, weights=dwell, minlength=size)
    counts = []
    for cell in np.flatnonzero(shown):
        day, rest = divmod(int(cell), depth * depth)
        doc, position = divmod(rest, depth)
        counts.append(CountRow(keyword, docs[doc], position + 1, days[day], int(shown[cell]),
                               int(clicks[cell]), float(dwell_sum[cell]), int(clicks[cell])))
    clicked = found.clicks.any(axis=1)
    first = found.clicks.argmax(axis=1)
    searches = []
    for index, day in enumerate(days):
        today = day_of == index
        firsts = np.bincount(first[today & clicked], minlength=depth).tolist()
        while firsts and firsts[-1] == 0:
            firsts.pop()
        searches.append(SearchesRow(keyword, day, int(today.sum()), firsts))
    return counts, searches, int(found.clicks.sum())


def _rows(evaluation: Evaluation, days: list[date]
          ) -> tuple[Iterator[CountRow], list[SearchesRow], int]:
    snapshots = list(Snapshot.objects.filter(keyword__evaluation=evaluation)
                     .order_by("keyword__position", "position")
                     .values_list("keyword__text", "keyword__normalized_text", "doc_id"))
    products = DemoProduct.objects.in_bulk({doc for _t, _n, doc in snapshots},
                                           field_name="sku")
    weights = {text: weight for text, weight, _intent in demo.SHOPPERS_QUERIES}
    by_keyword: dict[tuple[str, str], list[str]] = {}
    for text, normalized, doc in snapshots:
        by_keyword.setdefault((text, normalized), []).append(doc)
    rng = np.random.default_rng(SEED)
    counts: list[CountRow] = []
    searches: list[SearchesRow] = []
    click_total = 0
    for (text, normalized), docs in by_keyword.items():
        attractiveness = np.array([
            ATTRACTIVENESS[demo.relevance(text, products[doc])] if doc in products else 0.0
            for doc in docs])
        per_day = max(5, round(weights.get(text, 100) * TRAFFIC_SHARE))
        rows, found, clicked = _keyword_rows(rng, normalized, docs, attractiveness, per_day,
                                             days)
        counts.extend(rows)
        searches.extend(found)
        click_total += clicked
    return iter(counts), searches, click_total


def demo_behaviour_ensure(*, team: Team, evaluation: Evaluation,
                          today: date | None = None) -> BehaviourSource | None:
    """The team's simulated log over the evaluation's fetched results, ending today;
    the one there already if seeded before, None when nothing was fetched."""
    existing = BehaviourSource.objects.filter(team=team, name=SOURCE_NAME).first()
    if existing is not None:
        return existing
    today = today or datetime.now(UTC).date()
    days = [today - timedelta(days=offset) for offset in range(DAYS - 1, -1, -1)]
    counts, searches, click_total = _rows(evaluation, days)
    if not searches:
        return None
    return services.behaviour_source_store_sums(
        team=team, user=None, name=SOURCE_NAME, kind=BehaviourSource.Kind.UBI,
        window_start_at=datetime.combine(days[0], time.min, tzinfo=UTC),
        window_end_at=datetime.combine(today, time.max, tzinfo=UTC),
        search_count=sum(row.search_count for row in searches), event_count=click_total,
        counts=counts, searches=searches)


def demo_click_grader_ensure(*, team: Team, source: BehaviourSource, evaluation: Evaluation,
                             by: User | None) -> JudgeRun:
    """The team's clicks grader on the demo log and its shadow run on the evaluation,
    learned to the end (in this process: the run's dispatch may have gone to a worker);
    the ones there already if seeded before. ValidationError if the run cannot start."""
    grader = (ClickGrader.objects.filter(judge__team=team, judge__name=GRADER_NAME)
              .select_related("judge").first())
    if grader is None:
        grader = learning.click_grader_create(
            team=team, by=by, name=GRADER_NAME, source=source,
            click_model=ClickGrader.Model.PBM, min_impressions=GRADER_MIN_IMPRESSIONS,
            cuts=GRADER_CUTS)
    run = JudgeRun.objects.filter(judge=grader.judge, evaluation=evaluation).order_by(
        "-pk").first()
    if run is None:
        run = runs.run_start(judge=grader.judge, evaluation=evaluation,
                             mode=JudgeRun.Mode.SHADOW, started_by=by)
    learning.click_run_grade(run_id=run.pk)  # nothing to do when its dispatch learned it
    run.refresh_from_db()
    return run
