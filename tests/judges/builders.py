"""Judges for tests: the service account a judge grades through, and the judge itself."""

from itertools import count

from judges.models import Judge
from judges.secrets import encrypt_api_key
from searchtweak.models import Membership, Role, Team, User
from tests.judges.fake_providers import OPENAI, FakeProvider

_numbers = count(1)


def judge_with_account(team: Team, *, name: str = "", provider: str = OPENAI,
                       base_url: str = "http://127.0.0.1:9/v1", api_key: str = "",
                       **fields) -> Judge:
    """A judge of `team` with its service account as judges.services makes it: inactive,
    no usable password, a grader of the team."""
    number = next(_numbers)
    account = User.objects.create(username=f"judge.{team.pk}.{number}", is_judge=True,
                                  is_active=False)
    account.set_unusable_password()
    account.save(update_fields=["password"])
    Membership.objects.create(team=team, user=account, role=Role.GRADER)
    fields.setdefault("api_key_encrypted", encrypt_api_key(api_key))
    return Judge.objects.create(
        team=team, user=account, name=name or f"Judge {number}", provider=provider,
        base_url=base_url, model="fake-model", **fields)


def judge_for(team: Team, provider: FakeProvider, *, name: str = "Judge Dredd",
              counts: bool = True, **fields) -> Judge:
    """A judge of `team` talking to a fake provider with the key it demands."""
    fields = {"batch_size": 5, "timeout_seconds": 5.0, "max_retries": 2,
              "max_concurrent_requests": 4, **fields}
    fields.setdefault("base_url", provider.base_url)
    return judge_with_account(team, name=name, provider=provider.protocol,
                              api_key=provider.api_key or "", counts=counts, **fields)


def lane_paused_by_first_answer(*, run, judge: Judge, provider: FakeProvider, answer,
                                width: int = 4) -> int:
    """One lane of `width` calls, as on a worker, whose first answer comes after the run
    was paused (the lane has claimed a round ahead by then); how many calls were made."""
    from django.db import connection

    from judges import calls, lanes, runs

    def pause_then_answer(prompt, request):
        runs.run_pause(run=run)
        connection.close()
        return answer(prompt, request)

    provider.default = pause_then_answer
    with calls.new_client(judge) as client:
        assert lanes.lane_run(run=lanes.run_for_batches(run.pk), client=client,
                                seconds=60, width=width) is False
    return len(provider.received)
