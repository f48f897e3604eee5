"""Calibration of a judge that really ran: a shadow run through the engine against a local
fake model server, then its figures and its right to count."""

import pytest

from judges import runs
from judges.calibration import calibration_evaluations, judge_calibration
from judges.models import JudgeRun
from judges.trust import judge_mark_counts
from tests.judges.builders import judge_for
from tests.judges.calibration_data import bar, give
from tests.judges.fake_providers import OPENAI, fake_provider, grade_all
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db(transaction=True)

JUDGE_GRADES = {"d1": 3, "d2": 0, "d3": 2}


@pytest.fixture(autouse=True)
def _quick_retries(settings):
    settings.JUDGE_RETRY_BACKOFF_MS = 10


def test_a_finished_shadow_run_is_calibrated_and_earns_counts(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=3)
    # People: d1=3, d2=1, d3=2; the judge: 3, 0, 2. Pairs (3,3) (1,0) (2,2): 2 of 3 exact.
    for position, grade in enumerate([3, 1, 2], start=1):
        give(evaluation, "query 1", position, 0, personas.grader, grade)
    with fake_provider(OPENAI) as provider:
        provider.default = grade_all(lambda doc_id: JUDGE_GRADES[doc_id.rsplit("-", 1)[1]],
                                     reason="fits")
        judge = judge_for(personas.team, provider, counts=False)
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.SHADOW,
                             started_by=personas.lead)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE
    assert list(calibration_evaluations(judge=judge)) == [evaluation]
    result = judge_calibration(judge=judge, evaluation=evaluation)
    assert (result.judge_snapshot_count, result.pair_count) == (3, 3)
    assert result.exact_match_rate == pytest.approx(2 / 3)
    assert result.confusion == [[0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    # Three pairs clear a bar of three; κ (quadratic) is 0.9 here.
    bar(personas.team, min_pairs=3, min_kappa=0.4)
    trusted = judge_mark_counts(judge=judge, counts=True, by=personas.admin)
    assert (trusted.counts, trusted.counts_override_reason) == (True, "")
    assert (trusted.counts_evidence["pair_count"], trusted.counts_evidence["evaluation_id"]) \
        == (3, evaluation.pk)
