"""Announcements from judgments to the apps above it.

grades_changed(sender=FeedbackSlot, keyword_ids=[...], newly_dirty_ids=[...]) is sent after
the commit of any transaction that set, changed or cleared grades; those keywords were
marked dirty inside it, and newly_dirty_ids are the ones that were clean before (a
keyword that was dirty already has a recompute queued or running that will read them).
"""

from django.dispatch import Signal

grades_changed = Signal()
