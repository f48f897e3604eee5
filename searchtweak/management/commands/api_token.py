from django.core.management.base import BaseCommand, CommandError

from searchtweak.models import User
from searchtweak.services import api_token_create


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print its key (shown only this once)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line", help="A name for the token.")

    def handle(self, *args, username: str, name: str, **options) -> None:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"username: no user named {username!r}")
        _, key = api_token_create(user=user, name=name)
        self.stdout.write(key)
