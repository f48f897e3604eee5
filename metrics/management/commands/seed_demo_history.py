"""A past for the demo: two models that really differ, graded by people who disagree.

`make run` calls this after seed_demo. It adds a second demo model (the demo engine's
deliberately worse "cheap-first" ranking), a finished baseline evaluation of the BM25 model
graded by grader1..3 and marked as the team's baseline, and an evaluation of the cheap-first
model that grader1..3 have graded partly. The grades come from the demo engine's own notion
of relevance (evaluations.demo.relevance) with each grader's habits on top (a seeded random
generator: the same grades on every machine), so a newcomer sees a compare verdict, an
agreement below 1 and keywords that got worse. Grades are written through
judgments.grading like any grader's, and the stored values through the usual recompute.

A third model, tuned on the head of the shop's traffic (the demo engine's "head-tuned"
ranking: BM25's results for the most asked queries, cheap-first for the long tail), runs
the demo query set (weights and head / torso / tail tags) and is graded by the same people
in full, so it finishes and is judged against the baseline by the team's rule; it is also
judged per traffic segment and weighted by traffic (as `manage.py evaluate --gate
--segment head --segment tail --weighted` would), whose verdict says that
head held and tail fell.
A simulated search log of the demo's shoppers (behaviour.demo) gives the dashboards
click-through, first-click rank and abandonment beside the offline metrics, and a clicks
grader learns grades from it (PBM) in a shadow run on the baseline, which the three
graders graded in full: its calibration page shows the learned grades against theirs.
Safe to run twice: what exists is left as it is.
"""

import io
import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.urls import reverse

from behaviour.demo import demo_behaviour_ensure, demo_click_grader_ensure
from evaluations import demo
from evaluations.endpoints import services as endpoint_services
from evaluations.management.commands.seed_demo import (
    DEMO_KEYWORDS,
    EVALUATION_NAME,
    METRICS,
    MODEL_NAME,
    QUERY_SET_NAME,
    fetch_now,
    seeding_quietly,
)
from evaluations.models import DemoProduct, Evaluation, KeywordSet, SearchModel, Snapshot
from evaluations.query_sets import services as query_set_services
from evaluations.services import configuration
from judgments.grading import snapshot_grade
from judgments.selectors import snapshot_target_for_user
from metrics.models import RegressionVerdict, TeamBaseline
from metrics.reports.verdicts import regression_verdict_create
from metrics.services import team_baseline_set
from metrics_engine.verdicts import VerdictRule
from metrics_engine.weighted import HEAD, TAIL
from searchtweak.models import Team, User

CHEAP_MODEL_NAME = "Demo cheap-first"
BASELINE_NAME = "Demo baseline: BM25"
CANDIDATE_NAME = "Demo candidate: cheap-first ranking"
# Of the candidate's keywords, this many are graded by all three graders, then this many
# by grader1 only; the rest wait for the newcomer.
CANDIDATE_FULLY_GRADED = 30
CANDIDATE_PARTLY_GRADED = 10
TUNED_MODEL_NAME = "Demo head-tuned"
TAIL_RUN_NAME = "Demo candidate: tuned on the head"
# The segment verdict of the head-tuned run: the head and the tail of the demo query set's
# traffic, and the traffic-weighted means.
SEGMENT_RULE = VerdictRule(segments=(HEAD, TAIL), weighted=True)
# How each simulated grader departs from the demo's relevance: the chance of a grade one
# lower and of one higher.
GRADER_HABITS = {"grader1": (0.06, 0.06), "grader2": (0.12, 0.04), "grader3": (0.04, 0.16)}
SEED = 11


@contextmanager
def _quiet(*names: str) -> Iterator[None]:
    """The grader's creation and its run's summary are logged for operators; on the
    console of `make run` the command's own line says it."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class Command(BaseCommand):
    help = ("Give the demo a past: a finished, graded baseline evaluation and a partly graded "
            "one of a worse model, for compare, agreement and dashboards. Run after seed_demo.")

    def handle(self, *args, **options) -> None:
        team = Team.objects.filter(name="Demo").order_by("id").first()
        if team is None:
            raise CommandError("No Demo team: run `manage.py seed_demo` first.")
        with seeding_quietly():
            baseline, candidate = self._history(team)
            tail_run, segment_verdict = self._tail_regression(team, baseline)
            behaviour = demo_behaviour_ensure(team=team, evaluation=Evaluation.objects.get(
                team=team, name=EVALUATION_NAME))
            clicks_run = None
            if behaviour is not None:
                with _quiet("judges.services", "behaviour.learning"):
                    clicks_run = demo_click_grader_ensure(
                        team=team, source=behaviour, evaluation=baseline,
                        by=User.objects.get(username="lead"))
        compare = (f"{settings.SITE_URL}{reverse('metrics:compare')}"
                   f"?a={baseline.pk}&b={candidate.pk}")
        self.stdout.write(self.style.SUCCESS(
            f"Demo history: '{baseline.name}' ({baseline.status}, the team's baseline) and "
            f"'{candidate.name}' ({candidate.status}, partly graded); compare them under "
            f"Compare in the top menu: {compare}"))
        if segment_verdict is not None:
            dashboard = (f"{settings.SITE_URL}"
                         f"{reverse('metrics:evaluation_dashboard', args=[tail_run.pk])}")
            self.stdout.write(self.style.SUCCESS(
                f"Per segment, '{tail_run.name}' against the baseline: "
                f"{' '.join(segment_verdict.reasons[:2])} See {dashboard}"))
        if behaviour is not None:
            self.stdout.write(self.style.SUCCESS(
                f"Demo behaviour: '{behaviour.name}', {behaviour.search_count} searches over "
                f"the last days; click-through beside the offline metrics on each "
                f"evaluation's dashboard."))
        if clicks_run is not None:
            calibration = (f"{settings.SITE_URL}"
                           f"{reverse('judges:calibration', args=[clicks_run.judge_id])}")
            self.stdout.write(self.style.SUCCESS(
                f"Clicks grader: '{clicks_run.judge.name}' learned {clicks_run.done_count} "
                f"grades from that log in a shadow run on '{baseline.name}'; set against "
                f"the graders' grades on {calibration}"))

    def _history(self, team: Team) -> tuple[Evaluation, Evaluation]:
        lead = User.objects.get(username="lead")
        graders = {user.username: user for user in User.objects.filter(
            username__in=GRADER_HABITS)}
        bm25 = SearchModel.objects.get(team=team, name=MODEL_NAME)
        cheap = self._cheap_model(team, bm25)
        baseline = self._evaluation(team, lead, bm25, BASELINE_NAME, (
            "The BM25 ranking, graded by three people: the team's baseline."))
        candidate = self._evaluation(team, lead, cheap, CANDIDATE_NAME, (
            "The same keywords against the cheap-first ranking; graders are part way through."))
        self._grade(baseline, graders, keyword_count=len(DEMO_KEYWORDS))
        self._grade(candidate, graders, keyword_count=CANDIDATE_FULLY_GRADED)
        self._grade(candidate, {"grader1": graders["grader1"]},
                    keyword_count=CANDIDATE_FULLY_GRADED + CANDIDATE_PARTLY_GRADED)
        # The grades' recomputes ran after each commit; this makes sure of the stored values.
        for evaluation in (baseline, candidate):
            call_command("recompute_metrics", evaluation=evaluation.pk, stdout=io.StringIO())
        baseline.refresh_from_db()
        if baseline.status == Evaluation.Status.FINISHED and not TeamBaseline.objects.filter(
                team=team).exists():
            team_baseline_set(team=team, evaluation=baseline, user=lead)
        candidate.refresh_from_db()
        return baseline, candidate

    def _cheap_model(self, team: Team, bm25: SearchModel) -> SearchModel:
        return self._demo_model(
            team, bm25, CHEAP_MODEL_NAME, "cheap-first",
            "The demo engine's top 100 by relevance, re-sorted cheapest first: a deliberately "
            "worse ranking to compare against.")

    def _demo_model(self, team: Team, bm25: SearchModel, name: str, ranking: str,
                    description: str) -> SearchModel:
        model = SearchModel.objects.filter(team=team, name=name).first()
        if model is None:
            model = endpoint_services.search_model_create(
                team=team, created_by=None, endpoint=bm25.endpoint, name=name,
                params={"q": "#query#", "size": "10", "ranking": ranking},
                description=description, default_keywords=bm25.default_keywords)
        return model

    def _tail_regression(self, team: Team, baseline: Evaluation
                         ) -> tuple[Evaluation, RegressionVerdict | None]:
        """The head-tuned model over the demo query set, graded in full (so it finishes and
        the team's rule judges it), and its verdict per segment and weighted by traffic;
        None when the baseline is not finished (nothing to judge against)."""
        lead = User.objects.get(username="lead")
        graders = {user.username: user for user in User.objects.filter(
            username__in=GRADER_HABITS)}
        bm25 = SearchModel.objects.get(team=team, name=MODEL_NAME)
        tuned = self._demo_model(
            team, bm25, TUNED_MODEL_NAME, "head-tuned",
            "BM25 tuned on what shoppers ask most: its results for the head and torso of "
            "the traffic, cheap-first for the long tail the tuning never saw.")
        run = Evaluation.objects.filter(team=team, name=TAIL_RUN_NAME).first()
        if run is None:
            query_set = KeywordSet.objects.get(team=team, name=QUERY_SET_NAME,
                                               archived_at=None)
            run = query_set_services.evaluation_create_from_query_set(
                query_set=query_set, team=team, created_by=lead, model=tuned,
                name=TAIL_RUN_NAME, scale="graded", strategy=3, metrics=METRICS,
                description="The demo query set against a model tuned on the head of the "
                            "traffic: held on head, fell on tail.")
        fetch_now(run)
        run.refresh_from_db()
        self._grade(run, graders, keyword_count=run.keywords.count())
        call_command("recompute_metrics", evaluation=run.pk, stdout=io.StringIO())
        run.refresh_from_db()
        if baseline.status != Evaluation.Status.FINISHED:
            return run, None
        verdict = RegressionVerdict.objects.filter(
            evaluation=run, source=RegressionVerdict.Source.COMMAND).first()
        if verdict is None:
            verdict = regression_verdict_create(
                evaluation=run, baseline=baseline, rule=SEGMENT_RULE,
                source=RegressionVerdict.Source.COMMAND, user=lead)
        return run, verdict

    def _evaluation(self, team: Team, lead: User, model: SearchModel, name: str,
                    description: str) -> Evaluation:
        evaluation = Evaluation.objects.filter(team=team, name=name).first()
        if evaluation is None:
            evaluation = configuration.evaluation_create(
                team=team, created_by=lead, model=model, name=name, description=description,
                scale="graded", strategy=3, keywords=DEMO_KEYWORDS, metrics=METRICS,
                guidelines="3: exactly what was asked for. 2: close (other color or "
                           "audience). 1: same category, different product. 0: unrelated.")
        fetch_now(evaluation)
        evaluation.refresh_from_db()
        return evaluation

    def _grade(self, evaluation: Evaluation, graders: dict[str, User], *,
               keyword_count: int) -> None:
        if evaluation.status not in (Evaluation.Status.ACTIVE, Evaluation.Status.PENDING):
            return  # finished on an earlier run
        snapshots = list(
            Snapshot.objects.filter(keyword__evaluation=evaluation,
                                    keyword__position__lte=keyword_count)
            .select_related("keyword").order_by("keyword__position", "position"))
        products = DemoProduct.objects.in_bulk([s.doc_id for s in snapshots], field_name="sku")
        for username, user in sorted(graders.items()):
            lower, higher = GRADER_HABITS[username]
            # One transaction per grader and evaluation: their recomputes run once, after it.
            with transaction.atomic():
                for snapshot in snapshots:
                    product = products.get(snapshot.doc_id)
                    if product is None:
                        continue
                    rng = random.Random(f"{SEED}:{username}:{snapshot.keyword.text}:"
                                        f"{snapshot.doc_id}")
                    grade = rule = demo.relevance(snapshot.keyword.text, product)
                    draw = rng.random()
                    if draw < lower:
                        grade -= 1
                    elif draw < lower + higher:
                        grade += 1
                    # A grader who strayed from the rule is sometimes unsure and says why,
                    # so the judgments page's "Unsure only" and the exports' notes show some.
                    grade = min(3, max(0, grade))
                    unsure = grade != rule and rng.random() < 0.3
                    note = (f"Not sure: {product.category.lower()} in {product.color}; is that "
                            "what was asked for?") if unsure else ""
                    target = snapshot_target_for_user(user=user, snapshot_id=snapshot.pk)
                    snapshot_grade(user=user, target=target, grade=grade, unsure=unsure,
                                   note=note)
