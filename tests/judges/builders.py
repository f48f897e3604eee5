"""Judges for tests: the service account a judge grades through, and the judge itself."""

from judges.models import Judge
from judges.secrets import encrypt_api_key
from searchtweak.models import Membership, Role, User
from tests.judges.fake_providers import FakeProvider


def judge_for(team, provider: FakeProvider, *, name: str = "Judge Dredd", counts: bool = True,
              **fields) -> Judge:
    """A judge of `team` talking to a fake provider with the key it demands."""
    account = User.objects.create(username=f"judge.{team.pk}.{name.lower().replace(' ', '-')}",
                                  is_judge=True, is_active=False)
    account.set_unusable_password()
    account.save(update_fields=["password"])
    Membership.objects.create(team=team, user=account, role=Role.GRADER)
    fields = {"batch_size": 5, "timeout_seconds": 5.0, "max_retries": 2,
              "max_concurrent_requests": 4, **fields}
    return Judge.objects.create(
        team=team, user=account, name=name, provider=provider.protocol,
        base_url=provider.base_url, model="fake-model", counts=counts,
        api_key_encrypted=encrypt_api_key(provider.api_key or ""), **fields)
