"""Import a behaviour log from files into a team's sources: the way in for logs too large
to upload (the reading streams; docs/decisions/0020).

    python manage.py import_behaviour --team 3 --name "November" --ubi queries.ndjson events.ndjson
    python manage.py import_behaviour --team 3 --name "Q3 counts" --csv counts.csv \
        [--window-start 2026-07-01T00:00:00Z --window-end 2026-09-30T23:59:59Z]

A file with a bad line stores nothing; the command prints the lines named and exits 1.
"""

from datetime import datetime
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from behaviour import services
from searchtweak.models import Team


def _moment(value: str | None) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise CommandError(f"{value}: give a time zone (Z or +hh:mm)")
    return moment


class Command(BaseCommand):
    help = "Import UBI query and event logs, or a CSV of per-position counts, as a source."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--team", type=int, required=True)
        parser.add_argument("--name", required=True)
        kind = parser.add_mutually_exclusive_group(required=True)
        kind.add_argument("--ubi", nargs=2, type=Path, metavar=("QUERIES", "EVENTS"))
        kind.add_argument("--csv", type=Path)
        parser.add_argument("--window-start")
        parser.add_argument("--window-end")

    def handle(self, *args, **options) -> None:
        team = Team.objects.filter(pk=options["team"]).first()
        if team is None:
            raise CommandError(f"No team {options['team']}.")
        try:
            if options["ubi"]:
                queries, events = options["ubi"]
                with queries.open("rb") as query_lines, events.open("rb") as event_lines:
                    source = services.behaviour_source_import_ubi(
                        team=team, user=None, name=options["name"], queries=query_lines,
                        events=event_lines)
            else:
                with options["csv"].open("rb") as lines:
                    source = services.behaviour_source_import_csv(
                        team=team, user=None, name=options["name"], lines=lines,
                        window_start_at=_moment(options["window_start"]),
                        window_end_at=_moment(options["window_end"]))
        except ValidationError as error:
            for field, messages in error.message_dict.items():
                for message in messages:
                    self.stderr.write(f"{field}: {message}")
            raise CommandError("Nothing was imported.") from None
        self.stdout.write(f"Source {source.pk} ({source.kind}): {source.search_count} "
                          f"searches, {source.event_count} lines, "
                          f"{source.counts.count()} count rows.")
