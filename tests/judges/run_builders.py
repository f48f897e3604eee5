"""Judges, runs and call-log rows for the run pages' tests, written straight to the tables:
the pages only read them (the engine's own tests write them through judges.runs)."""

from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from judges.models import Judge, JudgeCall, JudgeRun
from searchtweak.models import Team, User
from tests.judges.builders import judge_with_account
from tests.judges.fake_providers import OPENAI

API_KEY = "sk-test-secret-0123456789"


def judge_of(team: Team, *, name: str = "", provider: str = OPENAI,
             base_url: str = "http://127.0.0.1:9/v1", api_key: str = API_KEY,
             counts: bool = False, **fields) -> Judge:
    """An active judge of `team` that no run of these tests calls."""
    return judge_with_account(team, name=name, provider=provider, base_url=base_url,
                              api_key=api_key, counts=counts, **fields)


def run_of(judge: Judge, evaluation, *, mode: str = JudgeRun.Mode.SHADOW,
           status: str = JudgeRun.Status.RUNNING, started_by: User | None = None,
           **counts) -> JudgeRun:
    return JudgeRun.objects.create(judge=judge, evaluation=evaluation, mode=mode,
                                   status=status, started_by=started_by, **counts)


def call_of(judge: Judge, *, run: JudgeRun | None = None, status: str = "ok",
            started_at: datetime | None = None, is_test: bool = False,
            tokens_in: int | None = 100, tokens_out: int | None = 20, **fields) -> JudgeCall:
    """A logged call whose request is redacted the way judges.core.redaction stores it."""
    request = {
        "method": "POST", "url": f"{judge.base_url}/chat/completions",
        "headers": {"authorization": "Bearer [redacted]",
                    "content-type": "application/json"},
        "body": {"model": judge.model, "messages": [
            {"role": "user", "content": "Keyword: shoes\n{\"id\": \"d1\"}"}]},
    }
    defaults = {
        "http_status": 200 if status == "ok" else 500, "latency_ms": 120, "pair_count": 2,
        "request": request,
        "answer": '{"grades": [{"id": "d1", "grade": 1, "reason": "fits"}]}'
        if status == "ok" else "",
        "error": "" if status == "ok" else "HTTP 500: server error",
    }
    return JudgeCall.objects.create(
        judge=judge, run=run, status=status, started_at=started_at or timezone.now(),
        is_test=is_test, tokens_in=tokens_in, tokens_out=tokens_out,
        **{**defaults, **fields})


def priced(judge: Judge, *, price_in: str = "2.50", price_out: str = "10") -> Judge:
    judge.price_in_per_million = Decimal(price_in)
    judge.price_out_per_million = Decimal(price_out)
    judge.save(update_fields=["price_in_per_million", "price_out_per_million"])
    return judge
