"""A query set's traffic segments: its keywords tagged head, torso or tail by their weights'
cumulative share (docs/METRICS.md, "Weighted means and segments"), hand-computed here;
written with each version, so a change of weights or cut points is a new version; the cut
points are settings of the set, checked by name on the page and in the API."""

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from evaluations.models import KeywordSet, QuerySetVersion
from evaluations.query_sets import services as query_set_services
from evaluations.query_sets.services import version_entries
from evaluations.services.keywords import KeywordEntry

pytestmark = pytest.mark.django_db

E = KeywordEntry


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def make_set(personas, keywords, **fields) -> KeywordSet:
    return query_set_services.query_set_create(
        team=personas.team, created_by=personas.lead, name="Shoes", keywords=keywords,
        traffic_segments=True, **fields)


def segments(query_set: KeywordSet) -> list[tuple[str, tuple[str, ...]]]:
    return [(entry.text, entry.tags) for entry in version_entries(query_set.current_version())]


def test_the_split_by_cumulative_traffic_share(personas):
    # T = 200. By weight: a 120 (before it 0 % → head), c 40 (60 % → torso), d 30 (80 %:
    # not under 80 → tail), e 7 (95 %) and b 3 (98.5 %) tail. docs case s01.
    query_set = make_set(personas, [E("a", 120), E("b", 3), E("c", 40), E("d", 30),
                                    E("e", 7)])
    assert segments(query_set) == [("a", ("head",)), ("b", ("tail",)), ("c", ("torso",)),
                                   ("d", ("tail",)), ("e", ("tail",))]


def test_a_keyword_starting_exactly_at_a_cut_is_past_it(personas):
    # T = 100: y starts at 50 % exactly → torso (not head); z at 80 % exactly → tail.
    at_cut = make_set(personas, [E("x", 50), E("y", 30), E("z", 20)])
    assert segments(at_cut) == [("x", ("head",)), ("y", ("torso",)), ("z", ("tail",))]
    # One below each cut: y starts at 49 % → head, z at 79 % → torso.
    query_set_services.query_set_version_create(
        query_set=at_cut, created_by=personas.lead, keywords=[E("x", 49), E("y", 30),
                                                              E("z", 21)])
    assert segments(at_cut) == [("x", ("head",)), ("y", ("head",)), ("z", ("torso",))]


def test_custom_cuts_ties_in_order_and_no_traffic(personas):
    # docs case s02: cuts 25 / 75, four equal weights: 0 % head, 25 % and 50 % torso, 75 %
    # tail, the ties in their given order.
    query_set = make_set(personas, [E("a", 10), E("b", 10), E("c", 10), E("d", 10)],
                         traffic_head_cut=25, traffic_torso_cut=75)
    assert [tags for _, tags in segments(query_set)] == [
        ("head",), ("torso",), ("torso",), ("tail",)]
    # docs case s03: no traffic at all, every keyword tail.
    query_set_services.query_set_version_create(
        query_set=query_set, created_by=personas.lead, keywords=[E("a", 0), E("b", 0)])
    assert [tags for _, tags in segments(query_set)] == [("tail",), ("tail",)]


def test_the_segment_replaces_a_typed_one_and_keeps_the_other_tags(personas):
    query_set = make_set(personas, [E("a", 9, ("lang:en", "tail")), E("b", 1, ("head",))])
    assert segments(query_set) == [("a", ("head", "lang:en")), ("b", ("tail",))]


def test_changed_weights_retag_in_a_new_version_and_the_same_ones_write_none(personas):
    query_set = make_set(personas, [E("a", 9), E("b", 1)])
    version, created = query_set_services.query_set_version_create(
        query_set=query_set, created_by=personas.lead, keywords=[E("a", 9), E("b", 1)])
    assert (version.number, created) == (1, False)
    version, created = query_set_services.query_set_version_create(
        query_set=query_set, created_by=personas.lead, keywords=[E("a", 1), E("b", 9)])
    assert (version.number, created) == (2, True)
    assert segments(query_set) == [("a", ("tail",)), ("b", ("head",))]


def test_new_cut_points_retag_and_turning_the_segments_off_drops_them(personas):
    query_set = make_set(personas, [E("a", 50, ("x",)), E("b", 30), E("c", 20)])
    query_set_services.query_set_update(query_set=query_set, created_by=personas.lead,
                                        traffic_head_cut=60, traffic_torso_cut=90)
    assert query_set.versions.count() == 2
    # a at 0 % head, b at 50 % head (under 60), c at 80 % torso (under 90).
    assert segments(query_set) == [("a", ("head", "x")), ("b", ("head",)), ("c", ("torso",))]
    query_set_services.query_set_update(query_set=query_set, name="Footwear")
    assert query_set.versions.count() == 2  # a rename retags nothing
    query_set_services.query_set_update(query_set=query_set, traffic_segments=False)
    assert segments(query_set) == [("a", ("x",)), ("b", ()), ("c", ())]
    assert query_set.versions.count() == 3


@pytest.mark.parametrize(("cuts", "field", "message"), [
    ({"traffic_head_cut": 80, "traffic_torso_cut": 50}, "traffic_torso_cut",
     "The torso must end above where the head ends (80 %)."),
    ({"traffic_head_cut": 50, "traffic_torso_cut": 50}, "traffic_torso_cut",
     "The torso must end above where the head ends (50 %)."),
    ({"traffic_head_cut": 50, "traffic_torso_cut": 101}, "traffic_torso_cut",
     "A cut point is a whole percentage from 0 to 100."),
    ({"traffic_head_cut": -1}, "traffic_head_cut",
     "A cut point is a whole percentage from 0 to 100."),
])
def test_cut_points_out_of_order_are_refused_on_the_cut_at_fault(personas, cuts, field,
                                                                   message):
    with pytest.raises(ValidationError) as raised:
        make_set(personas, ["a"], **cuts)
    assert raised.value.message_dict == {field: [message]}
    assert KeywordSet.objects.count() == 0


def test_the_widest_cut_points_are_accepted(personas):
    query_set = make_set(personas, [E("a", 1), E("b", 1)], traffic_head_cut=0,
                         traffic_torso_cut=100)
    assert [tags for _, tags in segments(query_set)] == [("torso",), ("torso",)]


def test_the_edit_page_sets_the_cut_points_and_names_a_bad_one(client, personas):
    query_set = make_set(personas, [E("a", 50), E("b", 30), E("c", 20)])
    client.force_login(personas.lead)
    edit = client.get(f"/query-sets/{query_set.pk}/edit/")
    # The lead edits their own tags: the segments are written again on save.
    assert edit.context["form"].initial["keywords"] == "a,50\nb,30\nc,20"
    post = {"name": "Shoes", "description": "", "keywords": "a,50\r\nb,30\r\nc,20",
            "traffic_segments": "on", "traffic_head_cut": "60", "traffic_torso_cut": "60"}
    response = client.post(f"/query-sets/{query_set.pk}/edit/", post)
    assert response.status_code == 400
    assert response.context["form"].errors["traffic_torso_cut"] == [
        "The torso must end above where the head ends (60 %)."]
    assert QuerySetVersion.objects.count() == 1
    response = client.post(f"/query-sets/{query_set.pk}/edit/",
                           {**post, "traffic_torso_cut": "90"})
    assert response.status_code == 302
    assert segments(query_set) == [("a", ("head",)), ("b", ("head",)), ("c", ("torso",))]
    page = client.get(f"/query-sets/{query_set.pk}/").content.decode()
    assert "the keywords making the first 60 % of traffic are tagged" in page


def test_the_api_sets_the_cut_points_and_names_a_bad_one(personas):
    api = api_for(personas.lead)
    response = api.post("/api/v1/query-sets/", {
        "name": "Shoes", "keywords": [{"keyword": "a", "weight": 50}, "b"],
        "traffic_segments": True}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["traffic_segments"], body["traffic_head_cut"],
            body["traffic_torso_cut"]) == (True, 50, 80)
    url = f"/api/v1/query-sets/{body['id']}/"
    keywords = api.get(url + "versions/1/keywords/").json()["results"]
    assert [k["tags"] for k in keywords] == [["head"], ["tail"]]

    for payload, expected in (
        ({"traffic_head_cut": 90}, {"traffic_torso_cut": [
            "The torso must end above where the head ends (90 %)."]}),
        ({"traffic_torso_cut": 101}, {"traffic_torso_cut": [
            "Ensure this value is less than or equal to 100."]}),
    ):
        response = api.patch(url, payload, format="json")
        assert response.status_code == 400
        assert response.json() == expected
    assert QuerySetVersion.objects.count() == 1

    response = api.patch(url, {"traffic_segments": False}, format="json")
    assert response.status_code == 200 and response.json()["current_version"] == 2
    keywords = api.get(url + "versions/2/keywords/").json()["results"]
    assert [k["tags"] for k in keywords] == [[], []]
