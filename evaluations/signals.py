"""Announcements from evaluations to the apps above it (which may not be imported here).

snapshots_created(sender=Evaluation, evaluation, keyword, snapshots) is sent inside the
transaction that stored a keyword's snapshots; judgments answers by creating their empty
feedback slots in the same transaction, so a snapshot never exists without its slots.

The evaluation's lifecycle events (started, fetched, finished, …) are in evaluations.events.
"""

from django.dispatch import Signal

snapshots_created = Signal()
