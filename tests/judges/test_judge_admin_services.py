"""Judge administration services: the service account, the key at rest, the checks each
setting gets, and delete that deactivates a judge whose grades exist."""

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from judges import services
from judges.core.prompts import default_template
from judges.core.providers import ANTHROPIC_BASE_URL, OPENAI_BASE_URL
from judges.models import Judge, JudgeRun
from judges.secrets import decrypt_api_key
from judgments.models import FeedbackSlot, Scale
from metrics_engine.scales import SCALES
from searchtweak.models import Membership, Role, User
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db

KEY = "sk-admin-secret-4242424242"
GOOD_TEMPLATE = "Keyword: {{keyword}}\nGuidelines: {{guidelines}}\nDocuments:\n{{documents}}"


def create(team, **fields):
    values = {"name": "GPT grader", "provider": "openai", "model": "gpt-4o-mini",
              "api_key": KEY, **fields}
    return services.judge_create(team=team, by=None, **values)


def problems_of(error: ValidationError) -> dict[str, str]:
    return {field: " ".join(messages) for field, messages in error.message_dict.items()}


def test_create_makes_an_inactive_grader_account_without_a_password(personas):
    judge = create(personas.team, tags=["DE", " fashion ", "de"], batch_size=10)
    account = User.objects.get(pk=judge.user_id)
    assert account.username == f"judge.{personas.team.pk}.gpt-grader"
    assert (account.is_judge, account.is_active, account.has_usable_password()) == (
        True, False, False)
    assert list(Membership.objects.filter(user=account).values_list("team_id", "role")) == [
        (personas.team.pk, Role.GRADER)]
    assert judge.base_url == OPENAI_BASE_URL  # empty: the provider's own
    assert judge.tags == ["de", "fashion"]  # the grader tags' normalisation
    assert (judge.batch_size, judge.is_active, judge.counts) == (10, True, False)


def test_a_second_judge_of_the_same_slug_gets_its_own_account(personas):
    first = create(personas.team, name="GPT grader")
    second = create(personas.team, name="GPT  Grader!")
    assert second.user.username == f"{first.user.username}-2"


def test_the_key_is_encrypted_in_the_database(personas):
    judge = create(personas.team)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT api_key_encrypted FROM {Judge._meta.db_table} WHERE id = %s",
                       [judge.pk])
        (raw,) = cursor.fetchone()
    assert raw and KEY not in raw
    assert decrypt_api_key(raw) == KEY


def test_update_keeps_the_key_when_left_empty_and_replaces_or_clears_it(personas):
    judge = create(personas.team)
    services.judge_update(judge=judge, by=None, api_key="", model="gpt-4.1")
    judge.refresh_from_db()
    assert (judge.model, decrypt_api_key(judge.api_key_encrypted)) == ("gpt-4.1", KEY)
    services.judge_update(judge=judge, by=None, api_key="sk-new-0000000000")
    judge.refresh_from_db()
    assert decrypt_api_key(judge.api_key_encrypted) == "sk-new-0000000000"
    services.judge_update(judge=judge, by=None, clear_api_key=True)
    judge.refresh_from_db()
    assert judge.api_key_encrypted == ""


def test_renaming_keeps_the_account(personas):
    judge = create(personas.team)
    account = judge.user_id, judge.user.username
    services.judge_update(judge=judge, by=None, name="Claude grader", provider="anthropic",
                          base_url="", model="claude-sonnet-4-5")
    judge.refresh_from_db()
    assert (judge.user_id, judge.user.username) == account
    assert (judge.name, judge.user.first_name, judge.base_url) == (
        "Claude grader", "Claude grader", ANTHROPIC_BASE_URL)


def test_templates_are_checked_and_the_error_names_the_scale(personas):
    with pytest.raises(ValidationError) as caught:
        create(personas.team, prompt_templates={"graded": "Grade {{documents}} well",
                                                "binary": "{{keyword}} {{documents}} {{nope}}"})
    problems = problems_of(caught.value)
    assert set(problems) == {"prompt_templates.graded", "prompt_templates.binary"}
    assert problems["prompt_templates.graded"].startswith(f"{SCALES['graded'].name} (graded): ")
    assert "{{keyword}}" in problems["prompt_templates.graded"]
    assert "unknown placeholder {{nope}}" in problems["prompt_templates.binary"]
    assert not Judge.objects.exists() and not User.objects.filter(is_judge=True).exists()


def test_a_template_for_a_scale_the_team_lacks_is_refused(personas):
    with pytest.raises(ValidationError) as caught:
        create(personas.team, prompt_templates={"stars": GOOD_TEMPLATE})
    assert problems_of(caught.value) == {
        "prompt_templates.stars": "the team has no scale 'stars'"}


def test_only_templates_that_differ_from_the_shipped_one_are_stored(personas):
    Scale.objects.create(team=personas.team, code="stars", name="Stars", lo=1, hi=5, labels={})
    shipped = default_template(SCALES["graded"]).replace("\n", "\r\n")  # as a browser posts
    judge = create(personas.team, prompt_templates={
        "graded": shipped, "binary": "", "stars": GOOD_TEMPLATE + "\r\n"})
    assert judge.prompt_templates == {"stars": GOOD_TEMPLATE + "\n"}


def test_parameters_are_checked_by_the_provider(personas):
    with pytest.raises(ValidationError) as caught:
        create(personas.team, parameters={"temperature": 0, "messages": []})
    assert problems_of(caught.value) == {
        "parameters": "model parameters may not set messages: the judge sets them itself"}
    with pytest.raises(ValidationError) as caught:
        create(personas.team, parameters=["temperature", 0])
    assert "JSON object" in problems_of(caught.value)["parameters"]
    with pytest.raises(ValidationError) as caught:
        create(personas.team, parameters={"temperature": float("nan")})
    assert "parameters" in problems_of(caught.value)
    judge = create(personas.team, provider="ollama", parameters={"temperature": 0, "seed": 7})
    assert judge.parameters == {"temperature": 0, "seed": 7}


@pytest.mark.parametrize("batch_size", [0, 21, True, 2.5])
def test_batch_size_is_1_to_20(personas, batch_size):
    with pytest.raises(ValidationError) as caught:
        create(personas.team, batch_size=batch_size)
    assert problems_of(caught.value) == {
        "batch_size": "A whole number of documents per call from 1 to 20."}


def test_every_bad_setting_is_named_at_once(personas):
    create(personas.team, name="Taken")
    with pytest.raises(ValidationError) as caught:
        create(personas.team, name="Taken", provider="gemini", base_url="ftp://models.test",
               model=" ", timeout_seconds=0, max_retries=11, max_concurrent_requests=0,
               requests_per_minute=0, price_in_per_million=-1, tags="de")
    assert set(problems_of(caught.value)) == {
        "name", "provider", "base_url", "model", "timeout_seconds", "max_retries",
        "max_concurrent_requests", "requests_per_minute", "price_in_per_million", "tags"}
    assert Judge.objects.count() == 1


def test_an_unknown_field_cannot_be_changed(personas):
    judge = create(personas.team)
    with pytest.raises(ValidationError) as caught:
        services.judge_update(judge=judge, by=None, counts=True)
    assert problems_of(caught.value) == {"counts": "cannot be changed"}


def test_deleting_an_unused_judge_removes_it_and_its_account(personas):
    judge = create(personas.team)
    assert services.judge_delete(judge=judge) is True
    assert not Judge.objects.exists()
    assert not User.objects.filter(pk=judge.user_id).exists()
    assert not Membership.objects.filter(user_id=judge.user_id).exists()


def test_deleting_a_judge_with_grades_deactivates_it_and_keeps_their_identity(personas):
    judge = create(personas.team)
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    FeedbackSlot.objects.filter(evaluation=evaluation).update(user=judge.user, grade=2)
    assert services.judge_delete(judge=judge) is False
    judge.refresh_from_db()
    assert judge.is_active is False
    assert FeedbackSlot.objects.get(evaluation=evaluation).user_id == judge.user_id


def test_deleting_a_judge_with_a_run_pauses_the_run(personas):
    judge = create(personas.team)
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    run = JudgeRun.objects.create(judge=judge, evaluation=evaluation, mode="shadow")
    assert services.judge_delete(judge=judge) is False
    run.refresh_from_db()
    assert (Judge.objects.get().is_active, run.status) == (False, "paused")


def test_a_base_url_with_a_control_character_is_named_not_a_crash(personas):
    # The parameters' probe builds a request from the base URL: with a bad one it must not
    # run (httpx would raise InvalidURL, a 500), and the URL is the problem named.
    with pytest.raises(ValidationError) as caught:
        create(personas.team, base_url="\x12http://models.test", parameters={"temperature": 0})
    assert set(problems_of(caught.value)) == {"base_url"}
    # Bad parameters beside it are still named in the same error.
    with pytest.raises(ValidationError) as caught:
        create(personas.team, base_url="\x12http://models.test", parameters={"messages": []})
    assert set(problems_of(caught.value)) == {"base_url", "parameters"}
    assert not Judge.objects.exists()
