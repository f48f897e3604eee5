"""Reads of share links: a lead's list, a lead's row, and the visitor's link by token."""

from django.db.models import QuerySet
from django.http import Http404

from searchtweak import access
from searchtweak.models import Role, Team, User
from sharing import tokens
from sharing.models import ShareLink

# Who makes, lists and revokes a team's links: they decide what leaves the team.
SHARE_ROLE = Role.LEAD


class LinkGone(Exception):
    """A link that existed and no longer opens: its state says why (expired, revoked)."""

    def __init__(self, link: ShareLink, state: str):
        super().__init__(state)
        self.link, self.state = link, state


def team_share_links(*, team: Team) -> QuerySet[ShareLink]:
    return ShareLink.objects.filter(team=team).select_related(
        "evaluation", "other_evaluation", "created_by", "revoked_by")


def share_link_get_for_user(*, user: User, link_id: int) -> ShareLink:
    return access.row_get_for_user(ShareLink.objects.all(), user=user, pk=link_id,
                                   what="share link", minimum_role=SHARE_ROLE)


def share_link_by_token(token: str) -> ShareLink:
    """The open link this token names: "No such share link." (404) for a token that names
    no link or the wrong secret alike; LinkGone for a right token of an expired or revoked
    link."""
    parts = tokens.token_parts(token)
    link = None
    if parts is not None:
        link = ShareLink.objects.select_related(
            "team", "evaluation__model", "other_evaluation__model").filter(pk=parts[0]).first()
    # The digest is compared whether or not the row exists, so the time taken does not
    # tell a visitor which ids exist.
    stored = link.token_hash if link is not None else "0" * 64
    if not tokens.secret_matches(parts[1] if parts else "", stored) or link is None:
        raise Http404("No such share link.")
    state = link.state()
    if state != ShareLink.State.ACTIVE:
        raise LinkGone(link, state)
    return link
