import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from evaluations.models import Evaluation
from judgments.grader_tags import grader_tags_set
from judgments.grading import feedback_submit
from judgments.models import FeedbackSlot, GraderTags, Scale, Transformer
from judgments.queue import slot_claim_next
from tests.judgments.builders import evaluation_with_slots
from tests.recompute_state import mark_of

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- the grading page ---


def test_the_grading_page_shows_the_next_result_with_its_grades(personas):
    evaluation = evaluation_with_slots(
        personas.team, keywords=1, positions=2, show_position=True,
        guidelines="**Perfect** means exact.\n\n<script>alert(1)</script>")
    snapshot = evaluation.keywords.get().snapshots.get(position=1)
    snapshot.fields = {"Brand": "Acme"}
    snapshot.image = "javascript:alert(1)"
    snapshot.save()
    response = client_for(personas.grader).get("/grade/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Result 1 for query 1" in html and "Position 1" in html and "Acme" in html
    for label in ("Poor", "Fair", "Good", "Perfect"):
        assert label in html
    assert "<strong>Perfect</strong> means exact." in html
    assert "<script>alert(1)</script>" not in html and "javascript:alert" not in html
    assert FeedbackSlot.objects.get(user=personas.grader).snapshot_id == snapshot.pk


SVG_URI = ("data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHdp"
           "ZHRoPSI5NiIgaGVpZ2h0PSI5NiIvPg==")


def page_with_image(personas, image: str) -> str:
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    evaluation.keywords.get().snapshots.update(image=image)
    response = client_for(personas.grader).get("/grade/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_grading_page_shows_a_data_uri_image(personas):
    html = page_with_image(personas, SVG_URI)
    assert f'<img src="{SVG_URI}" alt="" class="grade-image" data-testid="document-image">' in html


def test_the_grading_page_shows_an_https_image(personas):
    html = page_with_image(personas, "https://cdn.example.com/shoe.jpg?w=200&h=200")
    assert ('<img src="https://cdn.example.com/shoe.jpg?w=200&amp;h=200" alt=""'
            in html)


@pytest.mark.parametrize("image", [
    "javascript:alert(1)", "data:text/html;base64,PHNjcmlwdD4=", "/media/x.png"])
def test_the_grading_page_renders_no_other_image_source(personas, image):
    html = page_with_image(personas, image)
    assert 'data-testid="document-image"' not in html and "<img" not in html
    assert image not in html


def test_the_position_shows_only_when_the_evaluation_shows_positions(personas):
    hidden = evaluation_with_slots(personas.team, keywords=1, positions=2)
    shown = evaluation_with_slots(personas.team, keywords=1, positions=2, show_position=True)
    client = client_for(personas.grader)
    html = client.get(f"/grade/evaluations/{hidden.pk}/").content.decode()
    assert "Result 1 for query 1" in html
    assert 'data-testid="position"' not in html and "Position 1" not in html
    held = FeedbackSlot.objects.get(user=personas.grader)
    client.post(f"/grade/slots/{held.pk}/?evaluation={hidden.pk}", {"grade": "2"})
    html = client.get(f"/grade/evaluations/{shown.pk}/").content.decode()
    assert "Result 1 for query 1" in html
    assert 'data-testid="position" title="Where the search engine ranked this result">' \
        'Position 1</span>' in html


def test_the_grading_page_says_how_long_the_result_is_reserved(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=1)
    html = client_for(personas.grader).get("/grade/").content.decode()
    until = timezone.localtime(FeedbackSlot.objects.get(user=personas.grader).lease_expires_at)
    assert f"Reserved for you for 5 more minutes (until {until:%H:%M})" in html
    assert "Lease until" not in html


def test_the_grading_page_lists_its_keys_without_inline_scripts(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=1, scale="binary")
    html = client_for(personas.grader).get("/grade/").content.decode()
    assert '<dialog id="key-help"' in html and 'data-action="keys"' in html
    for line in ("<dd>Grade 0 (Irrelevant)</dd>", "<dd>Grade 1 (Relevant)</dd>",
                 "<dd>Back to the previous result</dd>", "<dd>Skip for now</dd>",
                 "<dd>Close this panel</dd>"):
        assert line in html
    assert "<script>" not in html and " onclick=" not in html and " onkeydown=" not in html


def test_posting_a_grade_saves_it_and_moves_on(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=2)
    client = client_for(personas.grader)
    client.get("/grade/")
    slot = FeedbackSlot.objects.get(user=personas.grader)
    response = client.post(f"/grade/slots/{slot.pk}/", {"grade": "3"})
    assert response.status_code == 302 and response.url == "/grade/"
    assert FeedbackSlot.objects.get(pk=slot.pk).grade == 3
    page = client.get("/grade/").content.decode()
    assert "Result 2 for query 1" in page and 'data-testid="mine-count">1<' in page


def test_an_htmx_post_follows_to_the_next_panel_only(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    client = client_for(personas.grader)
    client.get(f"/grade/evaluations/{evaluation.pk}/")
    slot = FeedbackSlot.objects.get(user=personas.grader)
    response = client.post(f"/grade/slots/{slot.pk}/?evaluation={evaluation.pk}",
                           {"grade": "1"}, follow=True, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == f"/grade/evaluations/{evaluation.pk}/"
    assert html.lstrip().startswith('<section id="grade-panel"')
    assert "Result 2 for query 1" in html


def test_a_grade_outside_the_scale_shows_an_error_and_changes_nothing(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=1, scale="binary")
    client = client_for(personas.grader)
    client.get("/grade/")
    slot = FeedbackSlot.objects.get(user=personas.grader)
    for bad in ("2", "x", ""):
        response = client.post(f"/grade/slots/{slot.pk}/", {"grade": bad})
        assert response.status_code == 400
        assert 'data-testid="grade-error"' in response.content.decode()
    stored = FeedbackSlot.objects.get(pk=slot.pk)
    assert stored.grade is None and mark_of(stored.keyword).version == 0


def test_a_grade_after_the_lease_ran_out_is_refused_with_a_message(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=1)
    client = client_for(personas.grader)
    client.get("/grade/")
    slot = FeedbackSlot.objects.get(user=personas.grader)
    FeedbackSlot.objects.filter(pk=slot.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=5))
    response = client.post(f"/grade/slots/{slot.pk}/", {"grade": "2"}, follow=True)
    assert "ran out" in response.content.decode()
    assert FeedbackSlot.objects.get(pk=slot.pk).grade is None


def test_a_grade_for_a_finished_evaluation_is_refused_with_a_message(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    client = client_for(personas.grader)
    client.get("/grade/")
    slot = FeedbackSlot.objects.get(user=personas.grader)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.FINISHED)
    response = client.post(f"/grade/slots/{slot.pk}/", {"grade": "2"}, follow=True)
    html = response.content.decode()
    assert "finished" in html and 'data-reason="inactive"' in html
    assert FeedbackSlot.objects.get(pk=slot.pk).grade is None


def test_skip_releases_the_result_and_shows_the_next(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=2)
    client = client_for(personas.grader)
    client.get("/grade/")
    slot = FeedbackSlot.objects.get(user=personas.grader)
    response = client.post(f"/grade/slots/{slot.pk}/skip/", follow=True)
    assert "Result 2 for query 1" in response.content.decode()
    assert FeedbackSlot.objects.get(pk=slot.pk).user_id is None


def test_the_previous_result_can_be_regraded(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=2)
    client = client_for(personas.grader)
    client.get("/grade/")
    first = FeedbackSlot.objects.get(user=personas.grader)
    client.post(f"/grade/slots/{first.pk}/", {"grade": "1"})
    page = client.get("/grade/").content.decode()
    # Backspace's link: the opaque address the page gives every result (judgments.views).
    link = re.search(r'<a href="(/grade/results/[^"]+/)" data-action="previous"', page).group(1)
    previous = client.get(link).content.decode()
    assert 'data-testid="regrade"' in previous and "Result 1 for query 1" in previous
    assert 'data-testid="regrade"' in client.get(f"/grade/slots/{first.pk}/").content.decode()
    client.post(f"/grade/slots/{first.pk}/", {"grade": "0"})
    assert FeedbackSlot.objects.get(pk=first.pk).grade == 0


def test_the_empty_page_thanks_a_grader_who_graded_everything(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=2)
    client = client_for(personas.grader)
    for _ in range(2):
        client.get("/grade/")
        slot = FeedbackSlot.objects.get(user=personas.grader, grade__isnull=True)
        client.post(f"/grade/slots/{slot.pk}/", {"grade": "1"})
    html = client.get("/grade/").content.decode()
    assert 'data-reason="done"' in html and "Thank you!" in html
    assert "Nothing is left for you to grade right now." in html
    assert "You graded 2 results." in html


def test_the_empty_page_says_nothing_is_active(personas):
    paused = evaluation_with_slots(personas.team, keywords=1, positions=2,
                                   status=Evaluation.Status.PENDING, name="Shoes")
    client = client_for(personas.grader)
    html = client.get("/grade/").content.decode()
    assert 'data-reason="inactive"' in html and "Thank you" not in html
    assert "No evaluation of Acme is active right now" in html
    html = client.get(f"/grade/evaluations/{paused.pk}/").content.decode()
    assert "Shoes is not active (pending)" in html


def test_the_empty_page_says_how_many_results_wait_for_which_tags(personas):
    grader_tags_set(team=personas.team, user=personas.grader, tags=["de"])
    evaluation_with_slots(personas.team, keywords=3, positions=4, tags=["de", "Fashion"])
    html = client_for(personas.grader).get("/grade/").content.decode()
    assert 'data-reason="routed"' in html and "Thank you" not in html
    assert "Nothing is routed to you" in html
    assert "12 results wait for graders tagged <code>de</code>, <code>fashion</code>." in html
    assert "You carry <code>de</code>." in html
    assert not FeedbackSlot.objects.filter(user=personas.grader).exists()


def test_the_empty_page_says_others_hold_the_rest_for_now(personas):
    evaluation_with_slots(personas.team, keywords=1, positions=3)
    for user in (personas.lead, personas.admin, personas.owner):
        slot_claim_next(user=user, team=personas.team)
    first_free = min(FeedbackSlot.objects.values_list("lease_expires_at", flat=True))
    html = client_for(personas.grader).get("/grade/").content.decode()
    assert 'data-reason="leased"' in html and "Thank you" not in html
    assert "3 results are reserved for other graders right now." in html
    local = timezone.localtime(first_free)
    assert f"look again after {local:%H:%M}." in html


def test_grading_pages_refuse_wrong_methods_and_outsiders(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    client_for(personas.grader).get("/grade/")
    slot = FeedbackSlot.objects.get(user=personas.grader)
    assert client_for(personas.grader).post("/grade/").status_code == 405
    assert client_for(personas.grader).get(f"/grade/slots/{slot.pk}/skip/").status_code == 405
    outsider = client_for(personas.outsider)
    assert outsider.post(f"/grade/slots/{slot.pk}/", {"grade": "1"}).status_code == 404
    assert outsider.get(f"/grade/evaluations/{evaluation.pk}/").status_code == 404
    # Another member of the team cannot grade a slot that is not theirs either.
    assert client_for(personas.lead).post(
        f"/grade/slots/{slot.pk}/", {"grade": "1"}).status_code == 404
    assert FeedbackSlot.objects.get(pk=slot.pk).grade is None
    assert Client().get("/grade/").status_code == 302


# --- leads ---


def test_a_lead_sees_filters_grades_and_resets_feedback(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=1)
    slot = slot_claim_next(user=personas.grader, team=personas.team)
    feedback_submit(user=personas.grader, slot_id=slot.pk, grade=1)
    client = client_for(personas.lead)
    url = f"/feedback/evaluations/{evaluation.pk}/"
    page = client.get(f"{url}?grader={personas.grader.pk}").content.decode()
    assert page.count("data-slot-id=") == 1 and "grader" in page
    keyword = evaluation.keywords.get(position=2)
    assert client.get(f"{url}?keyword={keyword.pk}").content.decode().count("data-slot-id=") == 1
    response = client.post(f"/feedback/slots/{slot.pk}/grade/", {"grade": "3", "next": url})
    assert response.status_code == 302 and response.url == url
    stored = FeedbackSlot.objects.get(pk=slot.pk)
    assert (stored.grade, stored.graded_by_id) == (3, personas.lead.pk)
    client.post(f"/feedback/slots/{slot.pk}/grade/", {"grade": "7"})
    assert FeedbackSlot.objects.get(pk=slot.pk).grade == 3
    client.post(f"/feedback/slots/{slot.pk}/reset/")
    assert FeedbackSlot.objects.get(pk=slot.pk).user_id is None


def test_feedback_pages_need_a_lead(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    slot = FeedbackSlot.objects.get(evaluation=evaluation)
    assert client_for(personas.grader).get(
        f"/feedback/evaluations/{evaluation.pk}/").status_code == 403
    assert client_for(personas.outsider).get(
        f"/feedback/evaluations/{evaluation.pk}/").status_code == 404
    outsider = client_for(personas.outsider)
    assert outsider.post(f"/feedback/slots/{slot.pk}/reset/").status_code == 404
    assert client_for(personas.grader).post(
        f"/feedback/slots/{slot.pk}/grade/", {"grade": "1"}).status_code == 403
    assert client_for(personas.grader).post(f"/feedback/slots/{slot.pk}/reset/").status_code == 403
    assert client_for(personas.lead).get(f"/feedback/slots/{slot.pk}/reset/").status_code == 405
    assert FeedbackSlot.objects.get(pk=slot.pk).grade is None


# --- admins ---


def test_an_admin_creates_edits_and_deletes_a_scale(personas):
    client = client_for(personas.admin)
    assert "Perfect" in client.get("/scales/").content.decode()
    response = client.post("/scales/new/", {
        "code": "stars", "name": "Stars", "lo": "1", "hi": "3",
        "labels": "1 Bad #d92d20\n2 Okay #f79009\n3 Great #079455"})
    assert response.status_code == 302
    scale = Scale.objects.get(team=personas.team, code="stars")
    assert scale.labels["3"] == {"label": "Great", "color": "#079455"}
    client.post(f"/scales/{scale.pk}/", {"name": "Three stars", "lo": "1", "hi": "3",
                                         "labels": "1 Bad\n2 Okay\n3 Great"})
    scale.refresh_from_db()
    assert (scale.name, scale.code) == ("Three stars", "stars")
    client.post(f"/scales/{scale.pk}/delete/")
    assert not Scale.objects.exists()


def test_a_bad_scale_shows_the_offending_line(personas):
    response = client_for(personas.admin).post("/scales/new/", {
        "code": "stars", "name": "Stars", "lo": "1", "hi": "3",
        "labels": "1 Bad\nTwo Okay\n3 Great #zz"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Line 2: start with the grade" in html and "Line 3: #zz is not a colour" in html
    assert not Scale.objects.exists()


def test_a_transformer_is_validated_row_by_row(personas):
    client = client_for(personas.admin)
    form = client.get("/transformers/edit/?source=graded&target=binary").content.decode()
    # The docs/METRICS.md default, prefilled: 0 -> 0, 1..3 -> 1.
    assert form.count('<option value="1" selected>') == 3
    response = client.post("/transformers/edit/", {
        "source": "graded", "target": "binary",
        "grade_0": "0", "grade_1": "5", "grade_2": "1", "grade_3": "1"})
    assert response.status_code == 400
    assert "5 is not a grade of Binary (0..1)" in response.content.decode()
    response = client.post("/transformers/edit/", {
        "source": "graded", "target": "binary", "grade_0": "0", "grade_1": "0", "grade_2": "1"})
    assert response.status_code == 400
    assert "Grade 3 is not mapped." in response.content.decode()
    assert not Transformer.objects.exists()
    response = client.post("/transformers/edit/", {
        "source": "graded", "target": "binary",
        "grade_0": "0", "grade_1": "0", "grade_2": "1", "grade_3": "1"})
    assert response.status_code == 302
    transformer = Transformer.objects.get()
    assert transformer.mapping == {"0": 0, "1": 0, "2": 1, "3": 1}
    client.post(f"/transformers/{transformer.pk}/delete/")
    assert not Transformer.objects.exists()


def test_an_admin_sets_grader_tags(personas):
    client = client_for(personas.admin)
    assert "grader" in client.get("/grader-tags/").content.decode()
    client.post(f"/grader-tags/{personas.grader.pk}/", {"tags": "DE, fashion,"})
    assert GraderTags.objects.get(user=personas.grader).tags == ["de", "fashion"]
    assert client.post(f"/grader-tags/{personas.outsider.pk}/", {"tags": "x"}).status_code == 404


def test_admin_pages_need_an_admin(personas):
    for user in (personas.lead, personas.grader):
        client = client_for(user)
        for url in ("/scales/", "/scales/new/", "/transformers/edit/", "/grader-tags/"):
            assert client.get(url).status_code == 403
    assert client_for(personas.admin).post("/scales/").status_code == 405


def test_the_grading_progress_counts_only_evaluations_that_take_grades(personas):
    # The demo's walk: a finished evaluation the grader graded today (3 of 4 slots) was
    # counted beside the active one, "3 of 10 results graded (30%)" for no work left there.
    active = evaluation_with_slots(personas.team, keywords=2, positions=3)
    finished = evaluation_with_slots(personas.team, keywords=1, positions=4)
    graded = list(FeedbackSlot.objects.filter(evaluation=finished).order_by("pk")[:3])
    for slot in graded:
        slot.user, slot.grade, slot.graded_at = personas.grader, 2, timezone.now()
    FeedbackSlot.objects.bulk_update(graded, ["user", "grade", "graded_at"])
    Evaluation.objects.filter(pk=finished.pk).update(status=Evaluation.Status.FINISHED)
    response = client_for(personas.grader).get("/grade/")
    assert response.status_code == 200
    html = response.content.decode()
    assert FeedbackSlot.objects.get(user=personas.grader, grade__isnull=True).evaluation == active
    assert re.search(r'data-testid="mine-count">0<.*data-testid="graded-count">0</span> of\s*'
                     r'<span data-testid="total-count">6</span> results graded \(0%\)', html,
                     re.S), html[html.find('data-testid="progress"'):][:400]
    # One evaluation's own page still shows its progress, finished or not.
    html = client_for(personas.grader).get(
        f"/grade/?evaluation={finished.pk}").content.decode()
    assert re.search(r'data-testid="graded-count">3</span> of\s*'
                     r'<span data-testid="total-count">4</span>', html)
