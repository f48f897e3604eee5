from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from evaluations.models import Evaluation, Keyword
from metrics.services import evaluation_metrics_recompute


class Command(BaseCommand):
    help = "Recompute stored metric values from the grades, from scratch."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--evaluation", type=int, help="Only this evaluation's id.")
        parser.add_argument("--quiet", action="store_true", help="No progress bar.")

    def handle(self, *args, evaluation: int | None, quiet: bool, **options) -> None:
        evaluations = Evaluation.objects.order_by("pk")
        if evaluation is not None:
            evaluations = evaluations.filter(pk=evaluation)
            if not evaluations.exists():
                raise CommandError(f"evaluation: no evaluation with id {evaluation}")
        evaluation_ids = list(evaluations.values_list("pk", flat=True))
        total = Keyword.objects.filter(evaluation_id__in=evaluation_ids).count()
        with tqdm(total=total, unit="keyword", disable=quiet or None,
                  file=self.stderr._out) as bar:
            for evaluation_id in evaluation_ids:
                evaluation_metrics_recompute(evaluation_id=evaluation_id, progress=bar.update)
        failed = Evaluation.objects.filter(pk__in=evaluation_ids).with_recompute_state() \
            .exclude(recompute_error="")
        for failure in failed:
            self.stderr.write(f"evaluation {failure.pk}: {failure.recompute_error}")
        self.stdout.write(
            f"Recomputed {total} keywords in {len(evaluation_ids)} evaluations"
            + (f"; {failed.count()} with errors" if failed else ".")
        )
