"""TEMPORARY stub of the engine's contract (HELPER-BRIEF.md) so the run pages import
before the lead's judges/runs.py lands; deleted before merging main."""

from decimal import Decimal

from django.core.exceptions import ValidationError

from judges.models import JudgeRun


def run_start(*, judge, evaluation, mode, started_by, refresh_cache=False) -> JudgeRun:
    raise ValidationError({"judge": "The engine is not merged yet."})


def run_pause(*, run):
    raise ValidationError("The engine is not merged yet.")


run_resume = run_cancel = run_retry_failed = run_pause


def run_progress(*, run) -> dict:
    cost: Decimal | None = None
    return {"status": run.status, "pairs": run.pair_count, "done": run.done_count,
            "failed": run.failed_count, "skipped": run.skipped_count, "left": run.left_count,
            "cached": run.cached_count, "calls": run.call_count, "tokens_in": run.tokens_in,
            "tokens_out": run.tokens_out, "cost": cost,
            "percent_done": run.done_count * 100 // run.pair_count if run.pair_count else 0}
