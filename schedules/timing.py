"""When a schedule is due: its time zone and cron expression checked as a lead saves
them, and the next due time of a stored schedule.

An interval keeps its phase from the due time just claimed; a cron expression is read in
the schedule's IANA zone. The next due time is the first one after *now*, not after the
one claimed: a schedule that missed several due times while everything was down runs
once, then keeps its rhythm.
"""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from cronsim import CronSim, CronSimError
from django.core.exceptions import ValidationError

from schedules.models import Schedule

MIN_INTERVAL_MINUTES = 15
MAX_INTERVAL_MINUTES = 365 * 24 * 60  # one year
# Names the zone database holds that are not zones a person chooses: `localtime` is the
# machine's own (it differs between the web and the beat host), `Factory` a placeholder.
_NOT_ZONES = frozenset({"localtime", "Factory", "posixrules"})
# Gaps between a cron expression's next firings checked against the minimum interval: a
# day of every-minute hours, or a year of weekly ones, shows any gap it will ever have.
_CRON_GAPS_CHECKED = 400


def zone_check(name: str) -> ZoneInfo:
    try:
        if name in _NOT_ZONES or name not in available_timezones():
            raise ZoneInfoNotFoundError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError({"time_zone": f"Unknown time zone {name!r} (use an IANA name "
                                            "such as Europe/Berlin or UTC)."}) from None


def cron_check(expression: str, time_zone: str) -> str:
    """The expression, stripped, or a ValidationError on `cron`: not five fields that
    cronsim reads, or firing more often than every MIN_INTERVAL_MINUTES."""
    expression = " ".join(expression.split())
    zone = zone_check(time_zone)
    if len(expression.split()) != 5:
        # cronsim reads six fields as seconds first: a different expression from the one
        # the lead meant, and one that may fire every minute.
        raise ValidationError({"cron": (
            f"Not a cron expression: “{expression}” has {len(expression.split())} fields; "
            "write five: minute hour day month weekday (e.g. “0 6 * * 1-5”).")})
    try:
        firings = CronSim(expression, datetime(2026, 1, 1, tzinfo=zone))
        previous = next(firings)
    except (CronSimError, StopIteration) as error:
        raise ValidationError({"cron": f"Not a cron expression: {error or 'it never fires'} "
                                       "(five fields: minute hour day month weekday, e.g. "
                                       "“0 6 * * 1-5”)."}) from None
    for _ in range(_CRON_GAPS_CHECKED):
        upcoming = next(firings, None)
        if upcoming is None:
            break
        gap = (upcoming - previous).total_seconds() / 60
        if gap < MIN_INTERVAL_MINUTES:
            raise ValidationError({"cron": (
                f"“{expression}” fires {gap:g} minutes apart at times; the minimum is "
                f"{MIN_INTERVAL_MINUTES} minutes.")})
        previous = upcoming
    return expression


class DueTimeUnknown(Exception):
    """A stored schedule whose next due time cannot be computed (an interval beyond the
    calendar, a cron expression or zone that no longer reads): it must be paused, not
    retried every tick. The message says why, for a lead."""


def stored_zone(schedule: Schedule) -> ZoneInfo:
    try:
        return ZoneInfo(schedule.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise DueTimeUnknown(f"unknown time zone {schedule.time_zone!r}") from None


def next_due_after(schedule: Schedule, moment: datetime, *, last_due: datetime | None = None
                   ) -> datetime:
    """The schedule's first due time strictly after `moment`. An interval keeps its phase
    from `last_due` (the due time just claimed), so a late tick does not shift it. Raises
    DueTimeUnknown when the stored timing gives no due time (the checks at save refuse
    such timings; a row stored before them, or written around them, may hold one)."""
    try:
        if schedule.interval_minutes:
            step = timedelta(minutes=schedule.interval_minutes)
            if last_due is None:
                return moment + step
            missed = max(0, int((moment - last_due) / step))
            due = last_due + step * missed
            while due <= moment:
                due += step
            return due
        # cronsim reads the hours and days in the zone of the moment it starts from.
        return next(CronSim(schedule.cron, moment.astimezone(stored_zone(schedule))))
    except (OverflowError, ValueError, CronSimError, StopIteration) as error:
        raise DueTimeUnknown(f"its next due time cannot be computed "
                             f"({type(error).__name__}: {error or 'no next time'}); "
                             "change its timing, then resume") from None
