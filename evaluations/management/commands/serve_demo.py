"""`make run`'s server: Django's development server (runserver, static files included)
that prints the demo's logins after its own start-up lines, so the logins are the last
thing on the screen when the server is ready (and again after each automatic reload)."""

from django.contrib.staticfiles.management.commands.runserver import (
    Command as RunserverCommand,
)

from evaluations.management.commands.seed_demo import write_logins


class Command(RunserverCommand):
    help = "Serve like runserver, then print the demo team's logins (seed them first)."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--password", default="demo",
                            help="The password seed_demo gave the demo users.")

    def handle(self, *args, **options) -> None:
        self.password = options["password"]
        super().handle(*args, **options)

    def on_bind(self, server_port: int) -> None:
        super().on_bind(server_port)
        write_logins(self.stdout, self.style, self.password)
