"""Every integer a page's form or query string reads is bounded: a number beyond 64 bits
(or negative) is a form error or an ignored filter, never a 500 — on SQLite such a number
cannot even be compared with an id."""

import pytest
from django.test import Client

from tests.judges.builders import judge_with_account
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db

HUGE = str(2**70)


@pytest.fixture
def world(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1, strategy=1)
    judge = judge_with_account(personas.team)
    return {"evaluation": evaluation.pk, "judge": judge.pk, "model": evaluation.model_id,
            "snapshot": evaluation.keywords.get().snapshots.get().pk}


def pages(world: dict) -> list[tuple[str, str, dict]]:
    e, j = world["evaluation"], world["judge"]
    return [
        ("get", f"/dashboard/evaluations/{e}/", {"page": HUGE}),
        ("get", f"/dashboard/evaluations/{e}/table/", {"after": HUGE}),
        ("get", f"/dashboard/evaluations/{e}/table/", {"before": HUGE, "dist": HUGE}),
        ("get", "/compare/", {"a": HUGE, "b": str(e)}),
        ("get", "/compare/", {"a": str(e), "b": "-3", "metric": HUGE, "page": HUGE}),
        ("get", "/compare/keyword/", {"a": HUGE, "b": str(e), "keyword": "x"}),
        ("get", "/compare/many/", {"evaluation": [HUGE, str(e)], "reference": HUGE}),
        ("get", "/compare/many/csv/", {"evaluation": [HUGE, str(e)]}),
        ("post", "/teams/switch/", {"team": HUGE}),
        ("get", f"/judges/{j}/calibration/", {"evaluation": HUGE}),
        ("post", f"/judges/{j}/counts/", {"counts": "true", "evaluation": HUGE}),
        ("get", f"/judges/{j}/calls/", {"run": HUGE}),
        ("post", f"/evaluations/{e}/judge-runs/start/", {"judge": HUGE, "mode": "shadow"}),
        ("get", f"/evaluations/{e}/judge-runs/estimate/", {"judge": HUGE, "mode": "shadow"}),
        ("post", f"/evaluations/{e}/triage/{world['snapshot']}/adjudicate/", {"grade": HUGE}),
        ("post", "/evaluations/new/", {"name": "x", "model": HUGE, "keywords": "a",
                                       "scale": "graded", "strategy": HUGE,
                                       "metrics": "ndcg@10", "reuse_grades": "none"}),
        ("post", "/schedules/new/", {"name": "x", "model": HUGE, "query_set": HUGE,
                                     "scale": "graded", "strategy": "1", "metrics": "ndcg@10",
                                     "interval_minutes": "60", "time_zone": "UTC",
                                     "deadline_hours": "24", "baseline": "first",
                                     "min_coverage": "90", "keep_runs": "10"}),
        ("get", "/leaderboards/", {"page": HUGE}),
        ("post", "/judges/new/", {"name": "j", "provider": "ollama", "model": "m",
                                  "base_url": "http://127.0.0.1:9/", "max_retries": "3",
                                  "timeout_seconds": "60", "batch_size": "5",
                                  "max_concurrent_requests": HUGE,
                                  "requests_per_minute": f"-{HUGE}"}),
    ]


def test_no_page_answers_a_huge_or_negative_number_with_a_server_error(personas, world):
    client = Client(raise_request_exception=False)
    client.force_login(personas.owner)
    wrong = []
    for method, path, data in pages(world):
        response = getattr(client, method)(path, data)
        if response.status_code >= 500:
            wrong.append((method, path, data, response.status_code))
    assert wrong == [], "\n".join(map(str, wrong))
