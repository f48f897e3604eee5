"""The manager of rows a team owns: a user sees those of the teams they belong to."""

from django.db import models

from searchtweak.models import User


class TeamOwnedQuerySet(models.QuerySet):
    def visible_to(self, user: User) -> "TeamOwnedQuerySet":
        if not user.is_authenticated:
            return self.none()
        return self.filter(team__memberships__user=user)
