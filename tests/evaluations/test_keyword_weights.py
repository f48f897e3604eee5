"""A keyword's weight and tags: typed and uploaded as `keyword,weight,tags` CSV, given to
the services as plain keywords, entries or the API's objects; every problem names its line
and field; and every path that copies keywords (evaluation ↔ query set, clone, schedule
runs) keeps them."""

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from evaluations.models import Evaluation, Keyword, KeywordSet, QuerySetKeyword
from evaluations.query_sets import services as query_set_services
from evaluations.query_sets.services import version_entries
from evaluations.services import configuration, keyword_input
from evaluations.services import keywords as keyword_services
from evaluations.services.keywords import KeywordEntry
from schedules import firing
from schedules import services as schedule_services
from schedules.models import Schedule
from tests.evaluations.factories import SearchModelFactory

pytestmark = pytest.mark.django_db

E = KeywordEntry


def entries_of(evaluation) -> list[tuple[str, int, list[str]]]:
    return list(evaluation.keywords.order_by("position").values_list("text", "weight", "tags"))


def typed_errors(text: str) -> list[str]:
    with pytest.raises(ValidationError) as raised:
        keyword_input.keywords_from_text(text)
    return raised.value.message_dict["keywords"]


def counts() -> tuple[int, int, int, int]:
    return (Evaluation.objects.count(), Keyword.objects.count(), KeywordSet.objects.count(),
            QuerySetKeyword.objects.count())


# --- typed lines ---------------------------------------------------------------------------


def test_typed_lines_read_keyword_weight_and_tags():
    text = ("running shoes,1200,Head|lang:EN | head\r\n"
            '"red, white shoes",40\r\n'
            "boots\r\n"
            '"""red shoes""",3,intent:broad\r\n'
            "hat,,lang:de\r\n"
            "scarf,3.0,\r\n"
            "kettle,0")
    assert keyword_input.keywords_from_text(text) == [
        E("running shoes", 1200, ("head", "lang:en")),  # lower-cased, deduplicated, sorted
        E("red, white shoes", 40),
        E("boots"),
        E('"red shoes"', 3, ("intent:broad",)),
        E("hat", 1, ("lang:de",)),
        E("scarf", 3),  # 3.0 is the integer 3, as validate_weights reads it
        E("kettle", 0),
    ]


def test_a_header_names_the_columns_and_a_keyword_typed_alone_stays_a_keyword():
    assert keyword_input.keywords_from_text("keyword,tags,weight\nboots,a|b,7") == [
        E("boots", 7, ("a", "b"))]
    assert keyword_input.keywords_from_text("query\nboots") == [E("query"), E("boots")]


def test_the_lines_a_person_edits_read_back_as_the_same_keywords():
    entries = [E("running shoes", 1200, ("head", "lang:en")), E("red, white shoes", 40),
               E("boots"), E('"red shoes"', 3, ("intent:broad",)), E("hat", 1, ("lang:de",)),
               E("pipe", 2, ("a,b",))]
    text = keyword_input.keywords_as_text(entries)
    assert text.splitlines()[:4] == ["running shoes,1200,head|lang:en",
                                     '"red, white shoes",40', "boots",
                                     '"""red shoes""",3,intent:broad']
    assert keyword_input.keywords_from_text(text) == entries


TAGS_21 = "|".join(f"t{number:02}" for number in range(21))


@pytest.mark.parametrize(("text", "message"), [
    ("boots,-1", "line 1: weight: '-1' is not a non-negative integer"),
    ("ok\nboots,1.5", "line 2: weight: '1.5' is not a non-negative integer"),
    ("ok\n\nboots,many", "line 3: weight: 'many' is not a non-negative integer"),
    ("boots,nan", "line 1: weight: 'nan' is not a non-negative integer"),
    ("boots,2147483648", "line 1: weight: 2147483648 is above 2,147,483,647, the largest "
                         "weight"),
    ("boots,1," + "x" * 51, "line 1: tags: 'xxxxxxxxxxxxxxxxxxxx'… is longer than 50 "
                            "characters (51)"),
    ("boots,1," + TAGS_21, "line 1: tags: 21 tags; a keyword has at most 20"),
    ("boots,1,ok|b\x07d", "line 1: tags: 'b\\x07d': control character U+0007 at column 2"),
    ("ok\nboots\x07", "line 2: control character U+0007 at column 6"),
    ("a,1,b,c", "line 1: 4 fields; a line is keyword,weight,tags (quote a keyword or tag "
                "that holds a comma)"),
    ('"open', "line 1: a double quote opened here is never closed"),
])
def test_each_bad_line_is_named_by_its_line_and_field(text, message):
    assert typed_errors(text) == [message]


def test_the_limits_are_exact():
    fifty = "y" * 50
    tags_20 = "|".join(f"t{number:02}" for number in range(20))
    assert keyword_input.keywords_from_text(
        f"a,2147483647,{fifty}\nb,1,{tags_20}|head\nc,0") == [
        E("a", 2147483647, (fifty,)),
        # The traffic segment is not counted among the 20.
        E("b", 1, ("head", *(f"t{number:02}" for number in range(20)))),
        E("c", 0)]


def test_every_bad_line_is_listed():
    assert typed_errors("a,-1\nb\nc,1,\x1b\nd,x") == [
        "line 1: weight: '-1' is not a non-negative integer",
        "line 3: tags: '\\x1b': control character U+001B at column 1",
        "line 4: weight: 'x' is not a non-negative integer"]


# --- uploads -------------------------------------------------------------------------------


def test_a_csv_upload_reads_weights_and_tags_by_position_or_by_header():
    plain = b'boots,12,lang:en|Head\n"wool, socks",3\nhat\n'
    assert keyword_input.keywords_from_upload(filename="k.csv", content=plain) == [
        E("boots", 12, ("head", "lang:en")), E("wool, socks", 3), E("hat")]
    named = b"tags,note,keyword,weight\nx|y,ignored,boots,5\n,,hat,\n"
    assert keyword_input.keywords_from_upload(filename="k.csv", content=named) == [
        E("boots", 5, ("x", "y")), E("hat")]
    # TXT stays one keyword a line: commas are the keyword's.
    assert keyword_input.keywords_from_upload(filename="k.txt", content=b"boots,12\n") == [
        E("boots,12")]


def test_a_csv_upload_names_the_line_and_field_of_each_problem():
    content = (b"keyword,weight,tags\nboots,-2\nhat,1.5\nscarf,1," + TAGS_21.encode()
               + b"\nok\n")
    with pytest.raises(ValidationError) as raised:
        keyword_input.keywords_from_upload(filename="k.csv", content=content)
    assert raised.value.message_dict == {"keywords_file": [
        "line 2: weight: '-2' is not a non-negative integer",
        "line 3: weight: '1.5' is not a non-negative integer",
        "line 4: tags: 21 tags; a keyword has at most 20"]}


# --- the services --------------------------------------------------------------------------


def test_the_api_objects_are_read_by_the_weight_rule_and_cleaned_like_keywords():
    cleaned = keyword_services.keywords_clean([
        {"keyword": " red\tshoes ", "weight": 3.0, "tags": ["Lang:EN", " ", "lang:en"]},
        "boots", {"keyword": "RED SHOES", "weight": 9}, E("hat", 0, ("b", "a"))])
    assert cleaned.entries == [E("red shoes", 3, ("lang:en",)), E("boots"),
                               E("hat", 0, ("a", "b"))]
    assert cleaned.duplicate_count == 1


@pytest.mark.parametrize(("item", "message"), [
    ({"keyword": "a", "weight": True}, "line 2: weight: True is not a non-negative integer"),
    ({"keyword": "a", "weight": "3"}, "line 2: weight: '3' is not a non-negative integer"),
    ({"keyword": "a", "weight": -1}, "line 2: weight: -1 is not a non-negative integer"),
    ({"keyword": "a", "weight": 1.5}, "line 2: weight: 1.5 is not a non-negative integer"),
    ({"keyword": "a", "weight": 2**70}, "line 2: weight: a number of more than 20 digits is "
                                         "above 2,147,483,647, the largest weight"),
    ({"keyword": "a", "tags": "x"}, "line 2: tags: must be a list of strings"),
    ({"keyword": "a", "tags": [1]}, "line 2: tags: 1 is not text"),
    ({"keyword": "a", "tags": ["a|b"]}, "line 2: tags: 'a|b': '|' separates tags"),
])
def test_a_bad_weight_or_tag_is_named_with_its_item(item, message):
    with pytest.raises(ValidationError) as raised:
        keyword_services.keywords_clean(["ok", item])
    assert raised.value.message_dict == {"keywords": [message]}


def evaluation_fields(personas, **fields) -> dict:
    return {"team": personas.team, "created_by": personas.lead,
            "model": SearchModelFactory(endpoint__team=personas.team), "name": "Spring",
            "scale": "graded", "strategy": 1, "metrics": [{"code": "ndcg", "k": 10}], **fields}


def test_an_evaluation_stores_weights_and_tags_and_refuses_a_bad_one_storing_nothing(personas):
    evaluation = configuration.evaluation_create(**evaluation_fields(personas, keywords=[
        E("boots", 40, ("head",)), "hat", {"keyword": "scarf", "weight": 2, "tags": ["x"]}]))
    assert entries_of(evaluation) == [("boots", 40, ["head"]), ("hat", 1, []),
                                      ("scarf", 2, ["x"])]
    before = counts()
    with pytest.raises(ValidationError) as raised:
        configuration.evaluation_create(**evaluation_fields(personas, keywords=[
            "ok", {"keyword": "bad", "weight": -3}]))
    assert raised.value.message_dict == {"keywords": [
        "line 2: weight: -3 is not a non-negative integer"]}
    assert counts() == before


def test_editing_a_pending_evaluations_weights_keeps_positions_and_unlinks_its_version(
        personas):
    query_set = query_set_services.query_set_create(
        team=personas.team, created_by=personas.lead, name="Shoes",
        keywords=[E("boots", 5, ("a",)), E("hat", 2)])
    evaluation = query_set_services.evaluation_create_from_query_set(
        query_set=query_set, **evaluation_fields(personas))
    assert evaluation.query_set_version is not None
    # The same keywords, weights and tags: still the version's.
    configuration.evaluation_update(evaluation=evaluation, keywords=[
        E("boots", 5, ("a",)), E("hat", 2)])
    evaluation.refresh_from_db()
    assert evaluation.query_set_version is not None
    configuration.evaluation_update(evaluation=evaluation, keywords=[
        E("boots", 7, ("a", "b")), E("hat", 2)])
    evaluation.refresh_from_db()
    assert list(evaluation.keywords.order_by("position").values_list(
        "position", "text", "weight", "tags")) == [(1, "boots", 7, ["a", "b"]),
                                                   (2, "hat", 2, [])]
    assert evaluation.query_set_version is None


def test_a_version_is_written_for_a_change_of_weight_or_tags_only(personas):
    query_set = query_set_services.query_set_create(
        team=personas.team, created_by=personas.lead, name="Shoes",
        keywords=[E("boots", 5), E("hat")])

    def save(keywords):
        return query_set_services.query_set_version_create(
            query_set=query_set, created_by=personas.lead, keywords=keywords)

    assert save(["boots,5", "hat"])[1] is True  # plain strings: "boots,5" is a keyword
    assert save([E("boots", 5), E("hat")])[0].number == 3
    assert save([E("boots", 5), E("hat")]) == (query_set.versions.get(number=3), False)
    assert save([E("boots", 6), E("hat")])[0].number == 4
    assert save([E("boots", 6), E("hat", 1, ("lang:en",))])[0].number == 5
    # The same tags in another order, or written in capitals, are the same keyword.
    assert save([E("boots", 6), E("hat", 1, ("LANG:EN",))])[1] is False
    assert version_entries(query_set.current_version()) == [
        E("boots", 6), E("hat", 1, ("lang:en",))]


def test_a_set_saved_from_an_evaluation_and_an_evaluation_from_a_set_keep_them(personas):
    evaluation = configuration.evaluation_create(**evaluation_fields(personas, keywords=[
        E("boots", 40, ("head", "lang:en")), E("hat", 0, ("tail",))]))
    query_set = query_set_services.query_set_create_from_evaluation(
        evaluation=evaluation, created_by=personas.lead, name="Saved")
    assert version_entries(query_set.current_version()) == [
        E("boots", 40, ("head", "lang:en")), E("hat", 0, ("tail",))]
    again = query_set_services.evaluation_create_from_query_set(
        query_set=query_set, **evaluation_fields(personas, name="Again"))
    assert entries_of(again) == [("boots", 40, ["head", "lang:en"]), ("hat", 0, ["tail"])]
    clone = configuration.evaluation_clone(evaluation=again, created_by=personas.lead)
    assert entries_of(clone) == entries_of(again)


def test_a_schedules_run_keeps_the_sets_weights_and_tags(personas):
    query_set = query_set_services.query_set_create(
        team=personas.team, created_by=personas.lead, name="Shoes",
        keywords=[E("boots", 30, ("lang:en",)), E("hat", 0)], traffic_segments=True)
    schedule = schedule_services.schedule_create(
        team=personas.team, created_by=personas.lead, name="Nightly",
        model=SearchModelFactory(endpoint__team=personas.team), query_set=query_set,
        scale="graded", strategy=1, metrics=[{"code": "ndcg", "k": 10, "params": {}}],
        interval_minutes=60, baseline=Schedule.Baseline.FIRST)
    # The fetch goes out after commit: this test's transaction never commits.
    runs, one_by_one = firing.schedules_fire_batch([(schedule.pk, schedule.next_due_at)],
                                                   now=timezone.now())
    assert one_by_one == []
    assert entries_of(runs[0].evaluation) == [("boots", 30, ["head", "lang:en"]),
                                              ("hat", 0, ["tail"])]
