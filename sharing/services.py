"""Making and revoking share links; each leaves one audit record."""

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.models import Action
from audit.services import audit_record
from evaluations.models import Evaluation
from searchtweak.models import User
from sharing import tokens
from sharing.models import ShareLink

# A link outlives no quarter: whoever holds it reads on without an account.
MAX_DAYS = 90


@transaction.atomic
def share_link_create(*, evaluation: Evaluation, other_evaluation: Evaluation | None = None,
                      created_by: User, days: int) -> tuple[ShareLink, str]:
    """A link to the dashboard of `evaluation`, or to the comparison of B
    (`other_evaluation`) against A (`evaluation`), open for `days` (1..MAX_DAYS). Returns
    the row and its token, which exists nowhere else: the caller shows it once. The caller
    has checked that `created_by` may share `evaluation`; B must be of the same team."""
    if not 1 <= days <= MAX_DAYS:
        raise ValidationError({"days": f"A link is open for 1 to {MAX_DAYS} days."})
    if other_evaluation is not None and other_evaluation.team_id != evaluation.team_id:
        raise ValidationError({"b": "Both evaluations must be of the same team."})
    secret = tokens.secret_new()
    now = timezone.now()
    link = ShareLink.objects.create(
        team_id=evaluation.team_id, evaluation=evaluation, other_evaluation=other_evaluation,
        kind=ShareLink.Kind.COMPARE if other_evaluation else ShareLink.Kind.DASHBOARD,
        token_hash=tokens.secret_hash(secret), created_by=created_by, created_at=now,
        expires_at=now + timedelta(days=days))
    audit_record(action=Action.SHARE_LINK_CREATED, actor=created_by, team_id=link.team_id,
                 object_type="share_link", object_id=link.pk,
                 after={"kind": link.kind, "evaluation": evaluation.pk,
                        "other_evaluation": other_evaluation.pk if other_evaluation else None,
                        "expires_at": link.expires_at.isoformat()})
    return link, tokens.token_of(link.pk, secret)


@transaction.atomic
def share_link_revoke(*, link: ShareLink, revoked_by: User) -> ShareLink:
    """Close the link for good. A link already revoked is refused (nothing to record)."""
    # The conditional update makes two revocations at once record one event.
    now = timezone.now()
    changed = ShareLink.objects.filter(pk=link.pk, revoked_at=None).update(
        revoked_at=now, revoked_by=revoked_by)
    if not changed:
        raise ValidationError({"link": "This link is already revoked."})
    link.revoked_at, link.revoked_by = now, revoked_by
    audit_record(action=Action.SHARE_LINK_REVOKED, actor=revoked_by, team_id=link.team_id,
                 object_type="share_link", object_id=link.pk,
                 before={"revoked_at": None}, after={"revoked_at": now.isoformat()})
    return link
