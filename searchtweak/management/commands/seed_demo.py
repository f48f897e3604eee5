from django.core.management.base import BaseCommand
from django.db import transaction

from searchtweak.models import Membership, Role, Team, User

DEMO_USERS = [
    ("lead", Role.LEAD),
    ("grader1", Role.GRADER),
    ("grader2", Role.GRADER),
    ("grader3", Role.GRADER),
]


class Command(BaseCommand):
    help = "Create the Demo team with a lead and three graders. Safe to run twice."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--password", default="demo")

    @transaction.atomic
    def handle(self, *args, password: str, **options) -> None:
        team = Team.objects.filter(name="Demo").order_by("id").first() or Team.objects.create(
            name="Demo"
        )
        for username, role in DEMO_USERS:
            user = User.objects.filter(username=username).first()
            if user is None:
                user = User(username=username, email=f"{username}@demo.invalid")
            user.set_password(password)
            user.current_team = team
            user.save()
            Membership.objects.update_or_create(team=team, user=user, defaults={"role": role})
        self.stdout.write(self.style.SUCCESS("Demo team ready. Log in with:"))
        for username, role in DEMO_USERS:
            self.stdout.write(f"  {username} / {password}  ({role.label})")
