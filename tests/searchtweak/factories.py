import factory

from searchtweak.models import Membership, Role, Team, User

PASSWORD = "secret-pass-1"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.test")
    password = factory.django.Password(PASSWORD)


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    name = factory.Sequence(lambda n: f"Team {n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    team = factory.SubFactory(TeamFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.GRADER


def member(team: Team, role: str, username: str | None = None) -> User:
    """A user in `team` with `role`, with the team as their current one."""
    kwargs = {"username": username} if username else {}
    user = UserFactory(current_team=team, **kwargs)
    MembershipFactory(team=team, user=user, role=role)
    return user
