"""A fetch stores a group of keywords in a constant number of statements: snapshots and
their feedback slots by COPY on PostgreSQL, multi-row INSERTs on SQLite; the rows are the ones a
keyword-at-a-time store wrote, and a group that crashed leaves nothing half-stored and is
stored once by a retry.

Runs on the database of the run: SQLite by default, PostgreSQL with DATABASE_URL."""

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluations.endpoints.mapper import Document
from evaluations.fetching import services as fetch_services
from evaluations.fetching.search_requests import FetchResult
from evaluations.models import Evaluation, Keyword, Snapshot
from evaluations.signals import snapshots_created
from judgments.models import FeedbackSlot
from tests.evaluations.factories import fetchable_evaluation

pytestmark = pytest.mark.django_db


def fetching(keywords: list[str], *, strategy: int = 3) -> Evaluation:
    """An evaluation in `fetching` with its keywords waiting (no server is asked: the
    results are handed to the store)."""
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=keywords,
                                      strategy=strategy)
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=Evaluation.Status.FETCHING, started_at=timezone.now())
    evaluation.refresh_from_db()
    return evaluation


def result(text: str, count: int = 3) -> FetchResult:
    return FetchResult(status_code=200, duration_ms=7, documents=[
        Document(doc_id=f"{text}-{n}", name=f"{text} #{n}", image=f"https://img/{n}.png",
                 fields={"rank": n, "tags": [text, "ü"]})
        for n in range(1, count + 1)])


def claim_all(evaluation) -> tuple:
    ids = list(Keyword.objects.filter(evaluation=evaluation).values_list("pk", flat=True))
    now = timezone.now()
    claimed = fetch_services.keywords_fetch_claim(keyword_ids=ids, lease_seconds=60, now=now)
    return now, claimed


def stored_rows(evaluation):
    snapshots = sorted(Snapshot.objects.filter(keyword__evaluation=evaluation).values_list(
        "keyword__text", "position", "doc_id", "name", "image", "fields"))
    slots = sorted(FeedbackSlot.objects.filter(evaluation=evaluation).values_list(
        "keyword__text", "snapshot__position", "index", "keyword_position", "position",
        "grade", "user_id"))
    keywords = sorted(Keyword.objects.filter(evaluation=evaluation).values_list(
        "text", "fetch_status", "fetch_status_code", "fetch_duration_ms", "fetch_error",
        "fetch_claimed_at"))
    return snapshots, slots, keywords


def test_a_group_stores_the_rows_a_keyword_at_a_time_store_wrote():
    evaluation = fetching(["shoes", "hats", "void", "broken"])
    claimed_at, claimed = claim_all(evaluation)
    assert list(claimed.values()) == ["shoes", "hats", "void", "broken"]
    ids = {text: pk for pk, text in claimed.items()}
    stored = fetch_services.keywords_fetch_store(claimed_at=claimed_at, results=[
        (ids["shoes"], result("shoes")), (ids["hats"], result("hats", 2)),
        (ids["void"], FetchResult(status_code=200, duration_ms=3, documents=[])),
        (ids["broken"], FetchResult(status_code=500, duration_ms=9, error="HTTP 500"))])
    assert sorted(keyword.text for keyword in stored) == ["broken", "hats", "shoes", "void"]
    snapshots, slots, keywords = stored_rows(evaluation)
    assert snapshots == sorted(
        (text, n, f"{text}-{n}", f"{text} #{n}", f"https://img/{n}.png",
         {"rank": n, "tags": [text, "ü"]})
        for text, count in (("shoes", 3), ("hats", 2)) for n in range(1, count + 1))
    # Three empty slots a result (strategy 3), with the keyword's and the result's place.
    positions = {"shoes": 1, "hats": 2}
    assert slots == sorted(
        (text, n, index, positions[text], n, None, None)
        for text, count in (("shoes", 3), ("hats", 2)) for n in range(1, count + 1)
        for index in range(3))
    assert keywords == [("broken", "failed", 500, 9, "HTTP 500", None),
                        ("hats", "fetched", 200, 7, "", None),
                        ("shoes", "fetched", 200, 7, "", None),
                        ("void", "fetched", 200, 3, "", None)]
    # Every slot points at its own keyword's snapshot.
    assert not FeedbackSlot.objects.filter(evaluation=evaluation).exclude(
        snapshot__keyword_id=F("keyword_id")).exists()


def test_one_keyword_stores_the_same_rows_as_a_group_of_it():
    alone, group = fetching(["shoes", "hats"]), fetching(["shoes", "hats"])
    claimed_at, claimed = claim_all(alone)
    for pk, text in claimed.items():
        assert fetch_services.keyword_fetch_store(keyword_id=pk, claimed_at=claimed_at,
                                                  result=result(text)) is not None
    claimed_at, claimed = claim_all(group)
    fetch_services.keywords_fetch_store(claimed_at=claimed_at, results=[
        (pk, result(text)) for pk, text in claimed.items()])
    assert stored_rows(alone) == stored_rows(group)


def test_a_group_that_crashed_left_nothing_and_a_retry_stores_it_once():
    evaluation = fetching(["a", "b", "c", "d"])
    claimed_at, claimed = claim_all(evaluation)
    ids = list(claimed)
    first, second = ids[:2], ids[2:]
    fetch_services.keywords_fetch_store(claimed_at=claimed_at,
                                        results=[(pk, result(claimed[pk])) for pk in first])

    def crash(sender, **kwargs):
        raise RuntimeError("the worker died while writing the slots")

    snapshots_created.connect(crash, dispatch_uid="test-crash", weak=False)
    try:
        with pytest.raises(RuntimeError):
            fetch_services.keywords_fetch_store(
                claimed_at=claimed_at, results=[(pk, result(claimed[pk])) for pk in second])
    finally:
        snapshots_created.disconnect(dispatch_uid="test-crash")
    # No half keyword: the crashed group's snapshots, slots and status all rolled back.
    assert sorted(Keyword.objects.filter(evaluation=evaluation).values_list(
        "text", "fetch_status")) == [("a", "fetched"), ("b", "fetched"), ("c", "pending"),
                                     ("d", "pending")]
    assert Snapshot.objects.filter(keyword__evaluation=evaluation).count() == 6
    assert FeedbackSlot.objects.filter(evaluation=evaluation).count() == 18
    # The retry (redelivered with the whole batch) stores the rest once, the rest not again.
    stored = fetch_services.keywords_fetch_store(
        claimed_at=claimed_at, results=[(pk, result(claimed[pk])) for pk in ids])
    assert sorted(keyword.text for keyword in stored) == ["c", "d"]
    assert fetch_services.keywords_fetch_store(
        claimed_at=claimed_at, results=[(pk, result(claimed[pk])) for pk in ids]) == []
    assert Snapshot.objects.filter(keyword__evaluation=evaluation).count() == 12
    assert FeedbackSlot.objects.filter(evaluation=evaluation).count() == 36
    assert FeedbackSlot.objects.filter(evaluation=evaluation).values(
        "snapshot_id", "index").distinct().count() == 36


def test_a_pending_keyword_that_already_has_snapshots_keeps_them_and_the_group_stores():
    # Impossible unless rows were edited by hand: its snapshots stay as they are (no
    # second set, no unique-position error rolling back the whole group).
    evaluation = fetching(["edited", "fresh"], strategy=1)
    claimed_at, claimed = claim_all(evaluation)
    ids = {text: pk for pk, text in claimed.items()}
    Snapshot.objects.create(keyword_id=ids["edited"], position=1, doc_id="by-hand",
                            name="kept")
    stored = fetch_services.keywords_fetch_store(claimed_at=claimed_at, results=[
        (ids["edited"], result("edited")), (ids["fresh"], result("fresh"))])
    assert sorted(keyword.text for keyword in stored) == ["edited", "fresh"]
    assert sorted(Snapshot.objects.filter(keyword__evaluation=evaluation).values_list(
        "keyword__text", "doc_id")) == [("edited", "by-hand"), ("fresh", "fresh-1"),
                                        ("fresh", "fresh-2"), ("fresh", "fresh-3")]
    assert sorted(Keyword.objects.filter(evaluation=evaluation).values_list(
        "text", "fetch_status")) == [("edited", "fetched"), ("fresh", "fetched")]
    assert FeedbackSlot.objects.filter(evaluation=evaluation).count() == 3


def _store_statements(keywords: int) -> list[str]:
    evaluation = fetching([f"k{n}" for n in range(keywords)])
    claimed_at, claimed = claim_all(evaluation)
    with CaptureQueriesContext(connection) as queries:
        fetch_services.keywords_fetch_store(claimed_at=claimed_at, results=[
            (pk, result(text, 10)) for pk, text in claimed.items()])
    assert Snapshot.objects.filter(keyword__evaluation=evaluation).count() == keywords * 10
    assert FeedbackSlot.objects.filter(evaluation=evaluation).count() == keywords * 30
    return [query["sql"] for query in queries.captured_queries]


def test_the_statements_of_a_group_do_not_grow_with_its_results():
    # 20 results and 60 slots, then 150 and 450.
    few, many = _store_statements(2), _store_statements(15)
    if connection.vendor == "postgresql":
        assert len(few) == len(many)
        # The rows went by COPY, none by INSERT.
        copies = [sql.split(" (")[0] for sql in many if sql.startswith("COPY")]
        assert copies == ['COPY "evaluations_snapshot"', 'COPY "judgments_feedbackslot"']
        assert not [sql for sql in many if sql.startswith("INSERT")]
    else:
        # SQLite binds at most 999 parameters a statement: multi-row INSERTs of ~50 rows,
        # and nothing else grows.
        def others(statements):
            return [sql.split(" ")[0] for sql in statements if not sql.startswith("INSERT")]

        assert len(others(few)) == len(others(many))
        assert len([sql for sql in many if sql.startswith("INSERT")]) <= (150 + 450) // 40


def test_a_request_thread_ended_by_a_base_exception_still_hands_in_a_result(monkeypatch):
    """The fetch loop counts results down to zero; a thread ended by what the keyword's own
    guard does not catch (SystemExit here) must not leave it waiting for ever."""
    from evaluations.fetching import services as fetch

    def answer(spec, text, *, client):
        if text == "stops":
            raise SystemExit("a request thread ended")
        return result(text)

    monkeypatch.setattr(fetch, "fetch_keyword_results", answer)
    groups = list(fetch._results(None, {1: "shoes", 2: "stops", 3: "boots"}, client=None,
                                 workers=2))
    by_keyword = dict(pair for group in groups for pair in group)
    assert sorted(by_keyword) == [1, 2, 3]
    assert by_keyword[2].error == "internal error: the request thread stopped"
    assert [d.doc_id for d in by_keyword[1].documents] == ["shoes-1", "shoes-2", "shoes-3"]


@pytest.mark.parametrize(("keywords", "limits", "batches"), [
    (5, {}, [3, 2]),            # FETCH_BATCH_SIZE a task while that makes few enough
    (10, {}, [5, 5]),           # larger tasks beyond FETCH_MAX_BATCHES of them
    (11, {}, [6, 5]),
    (30, {}, [12, 12, 6]),      # at most MAX_BATCH_GROWTH times FETCH_BATCH_SIZE
    (10, {"requests_per_minute": 60}, [3, 3, 3, 1]),   # limits set the pace: not larger
    (10, {"max_concurrent_requests": 1}, [3, 3, 3, 1]),
])
def test_a_fetch_is_cut_into_batch_size_tasks_or_into_at_most_max_batches(
        settings, django_capture_on_commit_callbacks, keywords, limits, batches):
    from evaluations.fetching import dispatch as fetch

    settings.FETCH_BATCH_SIZE, settings.FETCH_MAX_BATCHES = 3, 2
    evaluation = fetchable_evaluation(url="http://127.0.0.1:9", keywords=["k"], **limits)
    sent: list[tuple[int, list[int]]] = []
    registered = fetch._dispatcher
    fetch.keywords_fetch_dispatcher_register(lambda *task: sent.append(task))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            fetch.keywords_fetch_enqueue(evaluation_id=evaluation.pk,
                                         keyword_ids=list(range(keywords)))
    finally:
        fetch.keywords_fetch_dispatcher_register(registered)
    assert [len(ids) for _, ids in sent] == batches
    assert [pk for _, ids in sent for pk in ids] == list(range(keywords))
    assert {evaluation_id for evaluation_id, _ in sent} == {evaluation.pk}
