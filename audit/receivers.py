"""Sign-ins, announced by Django's authentication (docs/ARCHITECTURE.md, hooks)."""

from audit.models import Action
from audit.services import audit_record


def _address(request) -> str | None:
    return request.META.get("REMOTE_ADDR") if request is not None else None


def on_user_logged_in(sender, *, request, user, **kwargs) -> None:
    audit_record(action=Action.SIGN_IN, actor=user, address=_address(request),
                 object_type="user", object_id=user.pk)


def on_user_login_failed(sender, *, credentials, request=None, **kwargs) -> None:
    # Django has already masked the password in `credentials`; only the name is kept.
    audit_record(action=Action.SIGN_IN_FAILED,
                 actor_label=str(credentials.get("username", "")), address=_address(request))
