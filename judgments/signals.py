"""Announcements from judgments to the apps above it.

grades_changed(sender=FeedbackSlot, keyword_ids=[...]) is sent after the commit of any
transaction that set, changed or cleared grades; those keywords were marked dirty inside it.
"""

from django.dispatch import Signal

grades_changed = Signal()
