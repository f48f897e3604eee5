from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from audit.services import audit_events_prune


class Command(BaseCommand):
    help = ("Delete audit events older than AUDIT_RETENTION_DAYS (or --days); the trail's "
            "only delete path. Does nothing when the retention is 0 (keep forever).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--days", type=int, default=None,
                            help="keep this many days instead of AUDIT_RETENTION_DAYS")

    def handle(self, *args, days: int | None, **options) -> None:
        keep = settings.AUDIT_RETENTION_DAYS if days is None else days
        if keep < 0:
            raise CommandError("--days must be 0 (keep forever) or more")
        if keep == 0:
            self.stdout.write("AUDIT_RETENTION_DAYS is 0: every event is kept.")
            return
        deleted = audit_events_prune(older_than_days=keep)
        self.stdout.write(f"Deleted {deleted} audit events older than {keep} days.")
