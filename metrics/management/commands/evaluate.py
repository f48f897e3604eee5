"""`manage.py evaluate`: a CI entry point that creates, starts and measures an evaluation,
and a gate that judges an evaluation against a baseline.

Grades come from people later, or right away from earlier evaluations (reuse) and the
team's pool: the command prints the metrics computable now from the stored grades and
exits 2 when a `--fail-under` threshold is not met or its value is null (nothing graded).
With `--gate` (or `--evaluation ID`, which gates an existing evaluation instead of creating
one) it then stores and prints the regression verdict against `--baseline` (default: the
team's baseline), the same verdict as the gate API (metrics.reports.verdicts), and exits 3 when it
is *regressed*, or *undecided* with `--undecided fail`; `--segment TAG` (repeatable) and
`--weighted` judge segments and traffic-weighted means too, as the API's fields do.
Exit codes: 0 ok, 1 bad arguments, a failed start or fetch timeout, 2 threshold failed,
3 gate failed.
"""

import time
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, SearchModel
from evaluations.query_sets.file_formats import KINDS as KEYWORD_KINDS
from evaluations.query_sets.file_formats import query_set_file_read
from evaluations.selectors import fetch_progress
from evaluations.services import configuration, lifecycle
from metrics.models import RegressionVerdict
from metrics.reports.verdicts import (
    baseline_of_team,
    gate_passed,
    regression_verdict_create,
    verdict_segments_clean,
)
from metrics.services import evaluation_metrics_recompute
from metrics_engine.verdicts import VerdictRule
from searchtweak.models import User

GATE_FAILED = 3


def parse_metric(text: str) -> tuple[str, int]:
    """"ndcg@10" → ("ndcg", 10); "p@5" → ("precision", 5) (the registry's aliases)."""
    try:
        code, k = core.resolve_metric_name(text, "metric")
    except core.MetricInputError as error:
        raise CommandError(str(error)) from None
    if k is None:
        raise CommandError(f"metric: {text!r} is not code@k (e.g. ndcg@10)")
    return code, k


def parse_threshold(text: str) -> tuple[tuple[str, int], float]:
    name, sep, value = text.partition("=")
    if not sep:
        raise CommandError(f"fail-under: {text!r} is not metric=value (e.g. ndcg@10=0.6)")
    try:
        return parse_metric(name), float(value)
    except ValueError:
        raise CommandError(f"fail-under: {value!r} is not a number") from None


def _label(code: str, k: int) -> str:
    return core.metric_code_at_k(code, k)


def _problems(error: ValidationError) -> str:
    """"field: message; field: message", as the API's 400 names them."""
    return "; ".join(f"{field}: {' '.join(messages)}"
                     for field, messages in error.message_dict.items())


class Command(BaseCommand):
    help = ("Create an evaluation of a search model, start it, wait for its results and "
            "print the metrics computable now; exit 2 below a --fail-under threshold.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--model", type=int, help="Search model id (required unless "
                                                      "--evaluation).")
        parser.add_argument("--keywords",
                            help="A keyword file, recognised as a query set's upload is: "
                                 "plain text, CSV keyword,weight,tags, Quepid's basic CSV "
                                 "or a Workbench query set.")
        parser.add_argument("--keywords-format", default="auto", choices=list(KEYWORD_KINDS),
                            help="The keyword file's format when it cannot be recognised "
                                 "(default: auto).")
        parser.add_argument("--metric", action="append", default=[], dest="metrics",
                            help="code@k, repeatable: ndcg@10, p@5, recall@10 ...")
        parser.add_argument("--scale", default="graded")
        parser.add_argument("--strategy", type=int, default=1, choices=[1, 3])
        parser.add_argument("--name", default="")
        parser.add_argument("--reuse", default=Evaluation.Reuse.DOCUMENT,
                            choices=Evaluation.Reuse.values,
                            help="Fill slots with earlier grades (default: document).")
        parser.add_argument("--user", default="", help="Username recorded as the creator.")
        parser.add_argument("--wait-timeout", type=float, default=600.0,
                            help="Seconds to wait for the results to be fetched.")
        parser.add_argument("--fail-under", action="append", default=[], dest="thresholds",
                            help="metric=value, repeatable: ndcg@10=0.6")
        parser.add_argument("--quiet", action="store_true", help="No progress bar.")
        gate = parser.add_argument_group("gate", "Judge the evaluation against a baseline.")
        gate.add_argument("--gate", action="store_true",
                          help="After measuring, judge the new evaluation against the baseline.")
        gate.add_argument("--evaluation", type=int, default=None,
                          help="Gate this existing evaluation instead of creating one.")
        gate.add_argument("--baseline", type=int, default=None,
                          help="Baseline evaluation id (default: the team's baseline).")
        gate.add_argument("--undecided", choices=["pass", "fail"], default="pass",
                          help="Whether an undecided verdict passes (default: pass).")
        gate.add_argument("--threshold", type=float, default=None,
                          help="Count a change only beyond this absolute size, e.g. 0.01.")
        gate.add_argument("--min-coverage", type=float, default=VerdictRule.min_coverage,
                          help="Share of the keywords that must have a value (default 0.9).")
        gate.add_argument("--min-shared", type=int, default=VerdictRule.min_shared_keywords,
                          help="Fewest keywords with a value in both (default 5).")
        gate.add_argument("--segment", action="append", default=[], dest="segments",
                          help="A tag whose keywords are also judged apart, repeatable: "
                               "--segment tail --segment lang:de.")
        gate.add_argument("--weighted", action="store_true",
                          help="Also judge the means weighted by the keywords' weights "
                               "(traffic), overall and per segment.")

    def handle(self, *args, model: int | None, keywords: str | None, metrics: list[str],
               scale: str, strategy: int, name: str, reuse: str, user: str,
               wait_timeout: float, thresholds: list[str], quiet: bool, **options) -> None:
        rule = self._rule(options)
        if options["evaluation"] is not None:
            extra = [flag for flag, value in (("--model", model), ("--keywords", keywords),
                                               ("--metric", metrics),
                                               ("--fail-under", thresholds)) if value]
            if extra:
                raise CommandError(f"{', '.join(extra)}: not with --evaluation, which gates "
                                   "an existing evaluation")
            evaluation = Evaluation.objects.filter(pk=options["evaluation"]).first()
            if evaluation is None:
                raise CommandError(f"evaluation: no evaluation with id {options['evaluation']}")
            self._gate(evaluation, rule, options, self._user(user))
            return
        missing = [flag for flag, value in (("--model", model), ("--keywords", keywords),
                                             ("--metric", metrics)) if not value]
        if missing:
            raise CommandError(f"{', '.join(missing)}: required (or --evaluation ID)")
        wanted = [parse_metric(text) for text in metrics]
        limits = [parse_threshold(text) for text in thresholds]
        for metric, _ in limits:
            if metric not in wanted:
                raise CommandError(f"fail-under: {_label(*metric)} is not one of the --metric")
        search_model = SearchModel.objects.select_related("team").filter(pk=model).first()
        if search_model is None:
            raise CommandError(f"model: no search model with id {model}")
        creator = self._user(user)
        path = Path(keywords)
        if not path.is_file():
            raise CommandError(f"keywords: no such file {keywords}")
        try:
            keyword_list = query_set_file_read(
                filename=path.name, content=path.read_bytes(),
                kind=options["keywords_format"], taker="an evaluation").entries
            evaluation = configuration.evaluation_create(
                team=search_model.team, created_by=creator, model=search_model,
                name=name or f"{search_model.name} ({path.name})", scale=scale,
                strategy=strategy, keywords=keyword_list, reuse_grades=reuse,
                metrics=[{"code": code, "k": k, "params": {}} for code, k in wanted],
            )
            lifecycle.evaluation_start(evaluation=evaluation)
        except ValidationError as error:
            raise CommandError(_problems(error)) from None
        self.stderr.write(f"Evaluation {evaluation.pk} started.")
        self._wait(evaluation, wait_timeout, quiet)
        evaluation_metrics_recompute(evaluation_id=evaluation.pk)
        self._report(evaluation, wanted, limits)
        if options["gate"]:
            self._gate(evaluation, rule, options, creator)

    def _user(self, username: str) -> User | None:
        if not username:
            return None
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"user: no user {username!r}")
        return user

    def _rule(self, options: dict) -> VerdictRule:
        try:
            return VerdictRule(min_coverage=options["min_coverage"],
                               min_shared_keywords=options["min_shared"],
                               threshold=options["threshold"],
                               segments=verdict_segments_clean(options["segments"]),
                               weighted=options["weighted"])
        except ValidationError as error:
            raise CommandError(_problems(error)) from None
        except ValueError as error:
            raise CommandError(str(error)) from None

    def _gate(self, evaluation: Evaluation, rule: VerdictRule, options: dict,
              user: User | None) -> None:
        try:
            baseline = baseline_of_team(evaluation=evaluation, baseline_id=options["baseline"])
            verdict = regression_verdict_create(
                evaluation=evaluation, baseline=baseline, rule=rule,
                source=RegressionVerdict.Source.COMMAND, user=user)
        except ValidationError as error:
            raise CommandError(_problems(error)) from None
        self.stdout.write(f"Evaluation {evaluation.pk} against '{verdict.baseline_name}' "
                          f"({verdict.baseline_id}): {verdict.get_verdict_display()}")
        for reason in verdict.reasons:
            self.stdout.write(f"  {reason}")
        if not gate_passed(verdict.verdict, undecided_passes=options["undecided"] == "pass"):
            raise CommandError(f"GATE FAILED: {verdict.get_verdict_display().lower()} "
                               f"(verdict {verdict.pk})", returncode=GATE_FAILED)
        self.stdout.write(f"Gate passed (verdict {verdict.pk}).")

    def _wait(self, evaluation: Evaluation, timeout: float, quiet: bool) -> None:
        deadline = time.monotonic() + timeout
        progress = fetch_progress(evaluation=evaluation)
        with tqdm(total=progress.total, unit="keyword", disable=quiet or None,
                  file=self.stderr._out, desc="fetching") as bar:
            while True:
                progress = fetch_progress(evaluation=evaluation)
                bar.update(progress.done - bar.n)
                if progress.status != Evaluation.Status.FETCHING:
                    break
                if time.monotonic() > deadline:
                    raise CommandError(
                        f"evaluation {evaluation.pk}: still fetching after {timeout:g} s "
                        f"({progress.done} of {progress.total} keywords)")
                time.sleep(0.5)
        if progress.failed:
            self.stderr.write(f"{progress.failed} of {progress.total} keywords failed to fetch.")

    def _report(self, evaluation: Evaluation, wanted, limits) -> None:
        configs = list(EvaluationMetric.objects.filter(evaluation=evaluation)
                       .with_stored_mean().order_by("position", "id"))
        by_metric = {(config.code, config.k): config for config in configs}
        width = max(len(_label(*metric)) for metric in wanted) + 2
        self.stdout.write(f"{'metric':<{width}}{'value':>10}  keywords")
        for metric in wanted:
            config = by_metric[metric]
            value = "null" if config.value is None else f"{config.value:.4f}"
            self.stdout.write(f"{_label(*metric):<{width}}{value:>10}  {config.keyword_count}")
        failures = []
        for metric, limit in limits:
            value = by_metric[metric].value
            if value is None:
                failures.append(f"{_label(*metric)} is null (no graded keyword yet), "
                                f"needs >= {limit:g}")
            elif value < limit:
                failures.append(f"{_label(*metric)} = {value:.4f} is below {limit:g}")
        if failures:
            raise CommandError("FAILED: " + "; ".join(failures), returncode=2)
        self.stdout.write(f"Evaluation {evaluation.pk}: OK")
