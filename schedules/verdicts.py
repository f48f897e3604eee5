"""A schedule's run judged by its schedule's rule: the baseline the schedule chose, and the
verdict stored (and announced) when the run finishes.

The computation is metrics' (metrics.reports.verdicts.regression_verdict_create); this module
picks what it compares and by which rule. The same rule and baseline are the gate's
defaults for a run: `run_own_rule` answers metrics.verdict_rules (registered in
SchedulesConfig.ready).
"""

from django.core.exceptions import ValidationError

from evaluations.models import Evaluation
from metrics.models import RegressionVerdict
from metrics.reports.verdicts import regression_verdict_announce, regression_verdict_create
from metrics.selectors import team_baseline
from metrics.verdict_rules import OwnRule
from metrics_engine.verdicts import VerdictRule
from schedules.models import Schedule, ScheduleRun


def _usable_baseline(candidate: Evaluation | None, *, evaluation: Evaluation) -> bool:
    return (candidate is not None and candidate.pk != evaluation.pk
            and candidate.status == Evaluation.Status.FINISHED
            and candidate.scale == evaluation.scale)


def schedule_run_baseline(*, run: ScheduleRun, evaluation: Evaluation
                          ) -> tuple[Evaluation | None, str]:
    """The evaluation the schedule's rule compares the run with, or None and why not. The
    first or previous run counts only finished and with results (not a failed fetch)."""
    schedule = run.schedule
    if schedule.baseline == Schedule.Baseline.TEAM:
        baseline = team_baseline(team_id=evaluation.team_id)
        if _usable_baseline(baseline, evaluation=evaluation):
            return baseline, ""
        if baseline is None:
            return None, "The team has no baseline to compare the run with."
        return None, (f"The team's baseline “{baseline.name}” cannot be compared with the run "
                      "(not finished, on another scale, or the run itself).")
    earlier = (ScheduleRun.objects.filter(schedule_id=schedule.pk, fetch_failed=False,
                                          evaluation__status=Evaluation.Status.FINISHED,
                                          evaluation__scale=evaluation.scale)
               .exclude(evaluation_id=evaluation.pk).select_related("evaluation"))
    if schedule.baseline == Schedule.Baseline.FIRST:
        first = earlier.order_by("due_at", "pk").first()
        if first is None or first.due_at > run.due_at:
            return None, ("This is the schedule's first run with results: later runs are "
                          "compared with it.")
        return first.evaluation, ""
    previous = earlier.filter(due_at__lt=run.due_at).order_by("-due_at", "-pk").first()
    if previous is None:
        return None, "No earlier run of the schedule has results to compare with."
    return previous.evaluation, ""


def schedule_run_verdict(*, run: ScheduleRun, evaluation: Evaluation) -> RegressionVerdict:
    """The finished run against its schedule's baseline, by the schedule's rule, stored and
    announced. Without a baseline the run is *undecided*, with why; that is announced only
    when the run's fetch failed (a first run's lack of a baseline is nobody's news)."""
    rule = schedule_verdict_rule(run.schedule)
    baseline, missing = schedule_run_baseline(run=run, evaluation=evaluation)
    verdict = None
    if baseline is not None:
        try:
            verdict = regression_verdict_create(evaluation=evaluation, baseline=baseline,
                                                rule=rule,
                                                source=RegressionVerdict.Source.SCHEDULE)
        except ValidationError as error:
            missing = " ".join(error.messages)
    if verdict is None:
        reasons = [f"Undecided: {missing}"]
        if run.fetch_failed:
            reasons.append("The fetch failed for every keyword: the run has no values.")
        verdict = RegressionVerdict.objects.create(
            evaluation=evaluation, baseline=None, baseline_name="",
            verdict=RegressionVerdict.Verdict.UNDECIDED, reasons=reasons, metrics=[],
            rule={**rule.as_dict(), "metrics": []}, source=RegressionVerdict.Source.SCHEDULE)
        if len(reasons) == 1:
            return verdict
    regression_verdict_announce(verdict, evaluation=evaluation)
    return verdict


def schedule_run_verdict_on_finish(*, evaluation_id: int) -> RegressionVerdict | None:
    """The finished run's verdict by its schedule's rule (schedule_run_verdict), stored;
    None for an evaluation that is not finished or is no schedule's run."""
    evaluation = Evaluation.objects.filter(pk=evaluation_id).first()
    if evaluation is None or evaluation.status != Evaluation.Status.FINISHED:
        return None
    run = ScheduleRun.objects.select_related("schedule").filter(evaluation=evaluation).first()
    if run is None:
        return None
    return schedule_run_verdict(run=run, evaluation=evaluation)


def run_own_rule(evaluation: Evaluation) -> OwnRule | None:
    """For a schedule's run, its schedule's rule and the baseline it chose
    (schedule_run_baseline, read when asked); None for any other evaluation."""
    run = ScheduleRun.objects.select_related("schedule").filter(evaluation=evaluation).first()
    if run is None:
        return None
    return OwnRule(
        rule=schedule_verdict_rule(run.schedule),
        baseline=lambda: schedule_run_baseline(run=run, evaluation=evaluation))


def schedule_verdict_rule(schedule: Schedule) -> VerdictRule:
    """The rule a schedule's runs are judged by: its coverage, threshold, segments and
    weighting, the rest the defaults."""
    return VerdictRule(min_coverage=schedule.min_coverage, threshold=schedule.threshold,
                       segments=tuple(schedule.segments), weighted=schedule.weighted)
