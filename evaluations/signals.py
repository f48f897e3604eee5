"""Announcements from evaluations to the apps above it (which may not be imported here).

snapshots_created(sender=Evaluation, evaluation, snapshots_by_keyword) is sent inside the
transaction that stored a group of keywords' snapshots ({keyword: [snapshot, …]}, the
snapshots with their ids; a keyword whose search found nothing maps to []). Judgments
answers by creating their empty feedback slots in the same transaction, in one bulk
write for the group, so a snapshot never exists without its slots.

keyword_traffic_changed(sender=Keyword, evaluation_id) is sent inside the transaction that
changed the weights or tags of some of a started evaluation's keywords; metrics answers by
regrouping its per-segment sums in the same transaction.

The evaluation's lifecycle events (started, fetched, finished, …) are in evaluations.events.
"""

from django.dispatch import Signal

snapshots_created = Signal()
keyword_traffic_changed = Signal()
