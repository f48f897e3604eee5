"""evaluations.endpoints.mapper reads plain paths of names itself (jmespath builds an
interpreter per search): what it finds must be what jmespath finds, for any JSON."""

import functools

import jmespath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluations.endpoints import mapper
from evaluations.endpoints.mapper import MapperError, map_documents
from tests.property_depth import examples

names = st.sampled_from(["a", "b", "_id", "a-b", "héllo", ""])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(names, children, max_size=4),
    max_leaves=12,
)


def quoted(name: str) -> str:
    return '"' + name + '"'


@settings(max_examples=examples(100))
@given(path=st.lists(names, min_size=1, max_size=4), value=json_values)
def test_a_plain_path_finds_what_jmespath_finds(path, value):
    expression = ".".join(map(quoted, path))
    search = mapper._search_of(expression)
    assert isinstance(search, functools.partial)  # the direct read, not jmespath's
    assert search(value) == jmespath.search(expression, value)


@settings(max_examples=examples(100))
@given(value=json_values)
def test_the_current_node_is_the_value_itself(value):
    assert mapper._search_of("@")(value) == jmespath.search("@", value)


@pytest.mark.parametrize("expression", ["a[0]", "a[*].b", "@.a", "a || b", "length(a)",
                                        "a.b[0].c"])
def test_any_other_expression_is_searched_by_jmespath(expression):
    value = {"a": [{"b": 1, "c": 2}], "b": {"c": 3}}
    search = mapper._search_of(expression)
    assert not isinstance(search, functools.partial)
    assert search(value) == jmespath.search(expression, value)


def test_documents_are_read_by_paths_and_expressions_alike():
    answer = {"hits": {"hits": [
        {"_id": 7, "_source": {"title": "Tent", "tags": ["a", "b"], "brand": {"n": "X"}}},
        {"_id": "d2", "_source": {"title": ["not", "text"], "brand": None}},
        {"_id": 7, "_source": {"title": "repeated id"}},
    ]}}
    documents = map_documents(
        {"documents": "hits.hits", "id": "_id", "name": "_source.title", "image": None,
         "fields": {"Brand": "_source.brand.n", "Tag": "_source.tags[0]"}},
        answer, limit=10)
    assert [(d.doc_id, d.name, d.fields) for d in documents] == [
        ("7", "Tent", {"Brand": "X", "Tag": "a"}),
        ("d2", "", {"Brand": None, "Tag": None}),
    ]


def test_a_path_to_no_list_is_still_a_clear_error():
    with pytest.raises(MapperError) as raised:
        map_documents({"documents": "hits.total", "id": "id", "name": "title"},
                      {"hits": {"total": 3}}, limit=10)
    assert str(raised.value) == "mapper.documents: 'hits.total' found a number, not a list"
