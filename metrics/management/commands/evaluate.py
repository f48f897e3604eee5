"""`manage.py evaluate`: a CI entry point that creates, starts and measures an evaluation.

Grades come from people later, or right away from earlier evaluations (reuse) and the
team's pool: the command prints the metrics computable now from the stored grades and
exits 2 when a `--fail-under` threshold is not met or its value is null (nothing graded).
Exit codes: 0 ok, 1 bad arguments, a failed start or fetch timeout, 2 threshold failed.
"""

import time
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from evaluations import services as evaluation_services
from evaluations.models import Evaluation, EvaluationMetric, SearchModel
from evaluations.selectors import fetch_progress
from metrics import core
from metrics.services import evaluation_metrics_recompute
from searchtweak.models import User


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


class Command(BaseCommand):
    help = ("Create an evaluation of a search model, start it, wait for its results and "
            "print the metrics computable now; exit 2 below a --fail-under threshold.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--model", type=int, required=True, help="Search model id.")
        parser.add_argument("--keywords", required=True,
                            help="A TXT (one keyword a line) or CSV file of keywords.")
        parser.add_argument("--metric", action="append", required=True, dest="metrics",
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

    def handle(self, *args, model: int, keywords: str, metrics: list[str], scale: str,
               strategy: int, name: str, reuse: str, user: str, wait_timeout: float,
               thresholds: list[str], quiet: bool, **options) -> None:
        wanted = [parse_metric(text) for text in metrics]
        limits = [parse_threshold(text) for text in thresholds]
        for metric, _ in limits:
            if metric not in wanted:
                raise CommandError(f"fail-under: {_label(*metric)} is not one of the --metric")
        search_model = SearchModel.objects.select_related("team").filter(pk=model).first()
        if search_model is None:
            raise CommandError(f"model: no search model with id {model}")
        creator = None
        if user:
            creator = User.objects.filter(username=user).first()
            if creator is None:
                raise CommandError(f"user: no user {user!r}")
        path = Path(keywords)
        if not path.is_file():
            raise CommandError(f"keywords: no such file {keywords}")
        try:
            keyword_list = evaluation_services.keywords_from_upload(
                filename=path.name, content=path.read_bytes())
            evaluation = evaluation_services.evaluation_create(
                team=search_model.team, created_by=creator, model=search_model,
                name=name or f"{search_model.name} ({path.name})", scale=scale,
                strategy=strategy, keywords=keyword_list, reuse_grades=reuse,
                metrics=[{"code": code, "k": k, "params": {}} for code, k in wanted],
            )
            evaluation_services.evaluation_start(evaluation=evaluation)
        except ValidationError as error:
            raise CommandError("; ".join(
                f"{field}: {' '.join(messages)}"
                for field, messages in error.message_dict.items())) from None
        self.stderr.write(f"Evaluation {evaluation.pk} started.")
        self._wait(evaluation, wait_timeout, quiet)
        evaluation_metrics_recompute(evaluation_id=evaluation.pk)
        self._report(evaluation, wanted, limits)

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
