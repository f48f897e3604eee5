"""Gold probes on the HTML grading page (judgments.views, judgments.gold): handed out at the
evaluation's rate by the API's rule, shown like any result at an address that hides them,
graded on the probe only, skipped for good, the grader's own alone."""

import base64
import re
from html.parser import HTMLParser

import pytest
from django.test import Client
from rest_framework.test import APIClient

from evaluations.models import Evaluation, Keyword, Snapshot
from judgments import gold
from judgments.models import FeedbackSlot, GoldItem, GoldProbe
from metrics.models import KeywordMetricValue, KeywordRecomputeMark
from searchtweak.models import Role
from tests.evaluations.factories import EvaluationMetricFactory
from tests.judgments.builders import evaluation_with_slots
from tests.searchtweak.factories import member

pytestmark = pytest.mark.django_db

ITEM_URL = re.compile(r'action="(/grade/results/[A-Za-z0-9_=-]+/)(\?evaluation=\d+)?"')


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _gold_source(team, *, items: int) -> Evaluation:
    """A finished evaluation whose `items` results are gold items, answer 2."""
    source = evaluation_with_slots(team, keywords=1, positions=items, texts=["ducks"])
    for snapshot in Snapshot.objects.filter(keyword__evaluation=source):
        GoldItem.objects.create(team=team, scale="graded", snapshot=snapshot, grade=2,
                                source="page")
    Evaluation.objects.filter(pk=source.pk).update(status=Evaluation.Status.FINISHED)
    return source


def _held_probe(user) -> GoldProbe | None:
    return GoldProbe.objects.filter(user=user, grade__isnull=True, skipped_at__isnull=True).first()


class _Page:
    """One GET of the grading queue: its HTML and the shown result's form address."""

    def __init__(self, client: Client, evaluation: Evaluation):
        response = client.get(f"/grade/evaluations/{evaluation.pk}/")
        assert response.status_code == 200
        self.html = response.content.decode()
        found = ITEM_URL.search(self.html)
        # The result's address (the form's action) and its skip form's.
        self.url = found.group(1) + (found.group(2) or "") if found else None
        self.skip_url = found.group(1) + "skip/" + (found.group(2) or "") if found else None


def _until_probe(client: Client, user, evaluation: Evaluation) -> _Page:
    """Grade the slots handed out (grade 1) until the page shows a probe."""
    for _ in range(200):
        page = _Page(client, evaluation)
        assert page.url is not None, "the queue ran dry before a probe"
        if _held_probe(user) is not None:
            return page
        assert client.post(page.url, {"grade": "1"}).status_code == 302
    raise AssertionError("no probe in 200 claims")


def _at_a_probe(personas, *, items: int = 2, keywords: int = 2):
    """personas.grader on the grading page of a new evaluation (gold rate 50 %), graded
    until it shows a probe: (their client, the evaluation, the page, the probe)."""
    _gold_source(personas.team, items=items)
    evaluation = evaluation_with_slots(personas.team, keywords=keywords, positions=10,
                                       gold_rate=0.5)
    client = _client(personas.grader)
    page = _until_probe(client, personas.grader, evaluation)
    return client, evaluation, page, _held_probe(personas.grader)


@pytest.mark.slow_reason("grades a whole queue through the page to see every probe "
                        "the rule hands out")
def test_the_page_hands_out_probes_exactly_when_the_rule_says(personas):
    _gold_source(personas.team, items=30)
    evaluation = evaluation_with_slots(personas.team, keywords=5, positions=10, gold_rate=0.2)
    grader = personas.grader
    # What judgments.gold.probe_due says for each claim (claim number = slots + probes held).
    expected, slots, probes = [], 0, 0
    while slots < 50:
        due = gold.probe_due(user_id=grader.pk, evaluation_id=evaluation.pk,
                             claim_number=slots + probes, rate=0.2)
        expected.append(due)
        probes, slots = probes + due, slots + (not due)
    assert probes <= 30  # enough gold items: the rule alone decides
    client = _client(grader)
    handed = []
    page = _Page(client, evaluation)
    while page.url is not None:
        handed.append(_held_probe(grader) is not None)
        assert client.post(page.url, {"grade": "1"}).status_code == 302
        page = _Page(client, evaluation)
    assert handed == expected
    assert sum(handed) == probes == GoldProbe.objects.filter(user=grader).count()
    # The rate itself is the rule's, counted over fixed ids in test_gold.py
    # (test_probe_due_hits_the_rate_over_many_claims); here the ids are whatever the
    # database gives, and 24 probes in 74 claims (0.32 at a rate of 0.2) happened.
    assert probes > 0
    # Every gold item at most once to the grader, every slot graded once.
    assert len(set(GoldProbe.objects.filter(user=grader).values_list("gold_id", flat=True))) \
        == probes
    assert FeedbackSlot.objects.filter(evaluation=evaluation, user=grader,
                                       grade=1).count() == 50


class _Structure(HTMLParser):
    """The page's skeleton: each element's tag with its id, class, name, type, test id
    and action, in document order (texts and values aside)."""

    def __init__(self):
        super().__init__()
        self.elements: list[tuple] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.elements.append((tag, *(attributes.get(name) for name in (
            "id", "class", "name", "type", "data-testid", "data-action", "data-key"))))


def _panel(html: str) -> str:
    return html[html.index('<section id="grade-panel"'):html.index("</section>")]


def _structure(html: str) -> list[tuple]:
    parser = _Structure()
    parser.feed(_panel(html))
    return parser.elements


def test_a_probe_page_is_built_as_a_slot_page_and_says_nothing_of_gold(personas):
    _gold_source(personas.team, items=12)
    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=10, gold_rate=0.5,
                                       show_position=True, guidelines="Grade **3** if exact.")
    client = _client(personas.grader)
    probe_page = _until_probe(client, personas.grader, evaluation)
    while not FeedbackSlot.objects.filter(user=personas.grader, grade__isnull=False).exists():
        # The first claims were probes: compare pages that both have a previous result.
        client.post(probe_page.skip_url)
        probe_page = _until_probe(client, personas.grader, evaluation)
    probe = _held_probe(personas.grader)
    client.post(probe_page.url, {"grade": "2"})
    slot_page = _Page(client, evaluation)
    while _held_probe(personas.grader) is not None:  # the rule may hand out two in a row
        client.post(slot_page.url, {"grade": "2"})
        slot_page = _Page(client, evaluation)
    # The same elements, ids, classes, form fields and keys; the probe's own document.
    assert _structure(probe_page.html) == _structure(slot_page.html)
    assert 'data-testid="document-name">Result ' in probe_page.html
    assert f"Position {probe.gold.snapshot.position}" in probe_page.html
    assert f"Document {probe.gold.snapshot.doc_id}" in probe_page.html
    assert 'data-action="previous"' in probe_page.html  # Backspace works there too
    for page in (probe_page, slot_page):
        assert "gold" not in page.html.lower() and "probe" not in page.html.lower()
        assert 'data-url="/grade/results/' in page.html
        assert f'action="{page.skip_url}"' in page.html
    # The address is opaque: neither kind nor id reads out of it, and no two renders match.
    token = probe_page.url.split("/")[3]
    raw = base64.urlsafe_b64decode(token)
    assert b'"p"' not in raw and f"{probe.pk}]".encode() not in raw and len(raw) > 60
    assert _Page(client, evaluation).url != slot_page.url


def test_a_probe_graded_on_the_page_changes_no_slot_and_no_metric(personas):
    _gold_source(personas.team, items=3)
    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=10, gold_rate=0.5)
    EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=10, position=0)
    client = _client(personas.grader)
    page = _until_probe(client, personas.grader, evaluation)
    probe = _held_probe(personas.grader)
    mine_before = re.search(r'data-testid="mine-count">(\d+)<', page.html).group(1)
    graded_before = re.search(r'data-testid="graded-count">(\d+)<', page.html).group(1)

    def state():
        return (list(FeedbackSlot.objects.order_by("pk").values()),
                list(Keyword.objects.order_by("pk").values()),
                list(KeywordMetricValue.objects.order_by("pk").values()),
                list(KeywordRecomputeMark.objects.order_by("pk").values()))

    before = state()
    response = client.post(page.url, {"grade": "3", "unsure": "on", "note": " blurry "})
    assert response.status_code == 302
    assert response["Location"] == f"/grade/evaluations/{evaluation.pk}/"
    probe.refresh_from_db()
    assert (probe.grade, probe.unsure, probe.note, probe.expected) == (3, True, "blurry", 2)
    assert probe.graded_at is not None and probe.lease_expires_at is None
    assert state() == before
    # It moves on; "you graded" counts the probe, the evaluation's graded results do not.
    following = _Page(client, evaluation)
    assert following.url is not None and following.url != page.url
    assert re.search(r'data-testid="mine-count">(\d+)<', following.html).group(1) \
        == str(int(mine_before) + 1)
    assert re.search(r'data-testid="graded-count">(\d+)<', following.html).group(1) \
        == graded_before


def test_a_bad_grade_for_a_probe_is_a_400_that_stores_nothing(personas):
    client, _, page, probe = _at_a_probe(personas)
    for data, error in (({"grade": "7"}, "7 is not a grade of the"),
                        ({}, "Choose one of the grades."),
                        ({"grade": "1", "unsure": "on", "note": "n" * 2001}, "Note:")):
        response = client.post(page.url, data)
        assert response.status_code == 400
        html = response.content.decode()
        assert 'data-testid="grade-error"' in html and error in html
        assert "gold" not in html.lower() and "probe" not in html.lower()
    probe.refresh_from_db()
    assert probe.grade is None and probe.graded_at is None and not probe.note
    assert _held_probe(personas.grader) == probe  # still theirs, shown again next


def test_a_skipped_probe_never_comes_back_and_no_gold_item_comes_twice(personas):
    client, evaluation, page, skipped = _at_a_probe(personas, keywords=3)
    response = client.post(page.skip_url)
    assert response.status_code == 302
    skipped.refresh_from_db()
    assert skipped.skipped_at is not None and skipped.grade is None
    assert skipped.lease_expires_at is None
    # Nor does the grading API take a grade for it: the result's evaluation is finished.
    api = APIClient()
    api.force_authenticate(personas.grader)
    refused = api.post(f"/api/v1/snapshots/{skipped.gold.snapshot_id}/grade/", {"grade": 2},
                       format="json")
    assert refused.status_code == 400, refused.content
    skipped.refresh_from_db()
    assert skipped.grade is None
    # Grade everything else: the skipped item is never shown again, the other once.
    shown_gold = []
    page = _Page(client, evaluation)
    while page.url is not None:
        held = _held_probe(personas.grader)
        if held is not None:
            shown_gold.append(held.gold_id)
        assert client.post(page.url, {"grade": "1"}).status_code == 302
        page = _Page(client, evaluation)
    assert skipped.gold_id not in shown_gold
    assert len(shown_gold) == len(set(shown_gold)) <= 1
    assert GoldProbe.objects.filter(user=personas.grader).count() == 1 + len(shown_gold)
    assert FeedbackSlot.objects.filter(evaluation=evaluation, grade__isnull=True).count() == 0


def test_a_slot_skipped_on_the_page_goes_back_to_the_pool(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2, gold_rate=0)
    client = _client(personas.grader)
    page = _Page(client, evaluation)
    first = FeedbackSlot.objects.get(user=personas.grader)
    assert client.post(page.skip_url).status_code == 302
    first.refresh_from_db()
    assert first.user_id is None


def test_another_grader_can_neither_see_grade_nor_skip_someone_elses_probe(personas):
    _, _, page, probe = _at_a_probe(personas)
    other = _client(member(personas.team, Role.GRADER, "other-grader"))
    lead = _client(personas.lead)
    for client in (other, lead, _client(personas.outsider)):
        assert client.get(page.url).status_code == 404
        assert client.post(page.url, {"grade": "2"}).status_code == 404
        assert client.post(page.skip_url).status_code == 404
    # A forged or altered address is no address.
    assert other.get("/grade/results/not-a-token/").status_code == 404
    base = page.url.split("?")[0]
    assert _client(personas.grader).get(base[:-5] + "AAAA/").status_code == 404
    probe.refresh_from_db()
    assert probe.grade is None and probe.skipped_at is None
    # Its own grader sees it at that address.
    assert _client(personas.grader).get(page.url).status_code == 200


def test_the_wrong_method_is_refused(personas):
    client, _, page, _ = _at_a_probe(personas, items=1)
    assert client.get(page.skip_url).status_code == 405
    assert client.put(page.url).status_code == 405


PREVIOUS = re.compile(r'<a href="(/grade/results/[A-Za-z0-9_=-]+/(?:\?evaluation=\d+)?)" '
                      r'data-action="previous"')


def test_backspace_after_a_probe_goes_back_to_it_and_regrades_it(personas):
    client, evaluation, page, probe = _at_a_probe(personas)
    client.post(page.url, {"grade": "1"})
    following = _Page(client, evaluation)
    # Backspace leads to the probe, shown as a re-grade like any graded result.
    back = client.get(PREVIOUS.search(following.html).group(1)).content.decode()
    assert 'data-testid="regrade"' in back and probe.gold.snapshot.name in back
    assert "gold" not in back.lower() and "probe" not in back.lower()
    response = client.post(ITEM_URL.search(back).group(1) + f"?evaluation={evaluation.pk}",
                           {"grade": "3"})
    assert response.status_code == 302
    probe.refresh_from_db()
    assert probe.grade == 3
    assert not FeedbackSlot.objects.filter(grade=3).exists()
    # And Backspace on the probe goes further back, to what was graded before it.
    earlier = PREVIOUS.search(back)
    before = FeedbackSlot.objects.filter(user=personas.grader, grade__isnull=False,
                                         assigned_at__lt=probe.assigned_at)
    assert bool(earlier) == before.exists()
