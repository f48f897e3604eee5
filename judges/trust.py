"""Whether a judge's grades count: earned by a finished shadow run, never assumed.

A judge starts not counting (its runs may only shadow). An admin lets its grades count once
it has finished at least one shadow run, the run that calibration compares with the people;
taking the trust back is always allowed.
"""

import logging

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from judges.models import Judge, JudgeRun
from searchtweak.models import User

logger = logging.getLogger(__name__)

NO_SHADOW_RUN = ("Run this judge in shadow mode to the end first: its grades count only "
                 "after calibration against the people's.")


def has_done_shadow_run(*, judge: Judge) -> bool:
    return JudgeRun.objects.filter(judge=judge, mode=JudgeRun.Mode.SHADOW,
                                   status=JudgeRun.Status.DONE).exists()


@transaction.atomic
def judge_mark_counts(*, judge: Judge, counts: bool, by: User) -> Judge:
    """Set whether the judge's grades may fill slots. ValidationError on `counts` when
    asked to count without a finished shadow run."""
    judge = Judge.objects.select_for_update().get(pk=judge.pk)
    if counts and not has_done_shadow_run(judge=judge):
        raise ValidationError({"counts": NO_SHADOW_RUN})
    if judge.counts != counts:
        judge.counts = counts
        judge.updated_at = timezone.now()
        judge.save(update_fields=["counts", "updated_at"])
        logger.info("judge %s counts=%s, set by user %s", judge.pk, counts, by.pk)
    return judge
