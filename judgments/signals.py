"""Announcements from judgments to the apps above it.

grades_written(sender=FeedbackSlot, keyword_ids=[...], newly_dirty_ids=None) is sent inside
every transaction that sets, changes or clears grades, before it commits, so that what a
receiver writes (metrics: the keywords' versions and dirty marks) commits or rolls back with
the grades. `newly_dirty_ids` is None unless the statement that wrote the grade bumped the
versions itself (PostgreSQL's one-statement grade, through the statement part a receiver
registered with judgments.grading.register_version_bump_cte); it then lists the keywords
that statement turned from clean to dirty.
"""

from django.dispatch import Signal

grades_written = Signal()
