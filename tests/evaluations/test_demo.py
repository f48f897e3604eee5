"""The built-in demo search engine, ranked by the database's full-text search."""

import pytest

from evaluations import demo

pytestmark = pytest.mark.django_db


def test_it_ranks_matching_products_first(client):
    body = client.get("/demo/search", {"q": "cast iron skillet", "size": 5}).json()
    assert body["query"] == "cast iron skillet"
    assert len(body["hits"]) == 5 and body["total"] >= 5
    assert all("skillet" in hit["title"] for hit in body["hits"])
    assert set(body["hits"][0]) == {"id", "title", "description", "category", "brand", "color",
                                    "price", "image"}


def test_it_treats_query_text_as_words_not_syntax(client):
    for query in ['"unbalanced', "NEAR(a b)", "a OR", "*", "-- ; drop", "é ü 東京"]:
        response = client.get("/demo/search", {"q": query})
        assert response.status_code == 200, query


def test_an_empty_query_finds_nothing_and_a_bad_size_is_400(client):
    assert client.get("/demo/search", {"q": ""}).json()["hits"] == []
    assert client.get("/demo/search", {"q": "boots", "size": "x"}).status_code == 400
    assert client.post("/demo/search", {"q": "boots"}).status_code == 405


def test_category_filters_and_colors_rank(client):
    body = client.get("/demo/search", {"q": "red", "category": "Kitchen", "size": 20}).json()
    assert body["hits"] and all(hit["category"] == "Kitchen" for hit in body["hits"])
    assert body["hits"][0]["color"] == "red"


def test_the_catalog_is_generated_once():
    assert demo.catalog_ensure() == demo.CATALOG_SIZE
    assert demo.catalog_ensure() == demo.CATALOG_SIZE
