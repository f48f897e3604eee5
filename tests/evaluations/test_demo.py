"""The built-in demo search engine, ranked by the database's full-text search."""

import pytest

from evaluations import demo
from evaluations.models import DemoProduct

pytestmark = pytest.mark.django_db


def test_it_ranks_matching_products_first(client):
    body = client.get("/demo/search", {"q": "cast iron skillet", "size": 5}).json()
    assert body["query"] == "cast iron skillet"
    assert len(body["hits"]) == 5 and body["total"] >= 5
    assert all("skillet" in hit["title"] for hit in body["hits"])
    assert set(body["hits"][0]) == {"id", "title", "description", "category", "brand", "color",
                                    "price", "image"}


def _ranking(client, query: str) -> tuple[int, list[str]]:
    response = client.get("/demo/search", {"q": query, "size": 10})
    assert response.status_code == 200, query
    body = response.json()
    assert body["query"] == query
    return body["total"], [hit["id"] for hit in body["hits"]]


@pytest.mark.parametrize(("query", "words"), [
    ('"skillet', "skillet"), ("NEAR(cast iron)", "near cast iron"),
    ("boots OR", "boots or"), ("kettle*", "kettle"), ("-- ; drop kettle", "drop kettle"),
    ("title:lamp^2", "title lamp 2"), ("*", ""), ("é ü 東京", "é ü 東京")])
def test_it_treats_query_text_as_words_not_syntax(client, query, words):
    # The same answer as the bare words: FTS5 and tsquery operators are never obeyed.
    assert _ranking(client, query) == _ranking(client, words)


def test_syntax_around_real_words_still_finds_them(client):
    total, ids = _ranking(client, '"skillet')
    assert total > 0 and len(ids) == 10
    assert _ranking(client, "*") == (0, [])


def test_an_empty_query_finds_nothing_and_a_bad_size_is_400(client):
    assert client.get("/demo/search", {"q": ""}).json()["hits"] == []
    assert client.get("/demo/search", {"q": "boots", "size": "x"}).status_code == 400
    assert client.post("/demo/search", {"q": "boots"}).status_code == 405


def test_category_filters_and_colors_rank(client):
    body = client.get("/demo/search", {"q": "red", "category": "Kitchen", "size": 20}).json()
    assert body["hits"] and all(hit["category"] == "Kitchen" for hit in body["hits"])
    assert body["hits"][0]["color"] == "red"


def test_the_catalog_is_generated_once_and_the_same_everywhere():
    assert demo.catalog_ensure() == demo.CATALOG_SIZE
    assert demo.catalog_ensure() == demo.CATALOG_SIZE
    stored = list(DemoProduct.objects.order_by("sku").values_list(
        "sku", "title", "description", "category", "brand", "color", "price"))
    generated = [(p.sku, p.title, p.description, p.category, p.brand, p.color, p.price)
                 for p in demo.generate_catalog()]
    assert stored == generated
    assert stored[0][0] == "D00001" and stored[-1][0] == f"D{demo.CATALOG_SIZE:05d}"
    assert {row[3] for row in stored} == set(demo.CATEGORIES)
    assert {row[5] for row in stored} == set(demo.COLORS)
    assert all(9 <= row[6] < 400 for row in stored)
