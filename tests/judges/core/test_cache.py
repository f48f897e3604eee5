"""Cache keys: stable across dict order and runs, different for anything that shapes an answer."""

import hashlib

import pytest

from judges.core.cache import cache_key
from judges.core.providers import OpenAICompatible

BASE = {
    "keyword": "red shoes", "fields": {"title": "Red shoes", "meta": {"a": 1, "b": [1, 2]}},
    "template": "{{keyword}} {{documents}}", "provider": "openai http://127.0.0.1:9/v1",
    "model": "gpt-x", "parameters": {"temperature": 0, "seed": 7}, "guidelines": "g",
    "grades": [0, 1, 2, 3],
}


def test_the_key_is_a_sha256_that_does_not_change_between_runs():
    # Pinned to the recipe written out: a change here means every stored answer would be
    # asked again, so it must come with a new KEY_VERSION.
    recipe = (
        '{"fields":{"meta":{"a":1,"b":[1,2]},"title":"Red shoes"},"grades":[0,1,2,3],'
        '"guidelines":"g","keyword":"red shoes","model":"gpt-x",'
        '"parameters":{"seed":7,"temperature":0},"provider":"openai http://127.0.0.1:9/v1",'
        '"template":"{{keyword}} {{documents}}","version":1}'
    )
    assert cache_key(**BASE) == hashlib.sha256(recipe.encode()).hexdigest()


def test_dict_order_and_integral_floats_do_not_matter():
    reordered = {**BASE, "fields": {"meta": {"b": [1, 2], "a": 1}, "title": "Red shoes"},
                 "parameters": {"seed": 7, "temperature": 0.0}}
    assert cache_key(**reordered) == cache_key(**BASE)


@pytest.mark.parametrize("change", [
    {"keyword": "red shoe"},
    {"fields": {"title": "Red shoes", "meta": {"a": 1, "b": [2, 1]}}},
    {"template": "{{keyword}}\n{{documents}}"},
    {"provider": OpenAICompatible(model="gpt-x", base_url="http://127.0.0.1:8/v1").identity},
    {"model": "gpt-y"},
    {"parameters": {"temperature": 0.2, "seed": 7}},
    {"guidelines": "other"},
    {"grades": [0, 1]},
])
def test_anything_that_shapes_the_answer_changes_the_key(change):
    assert cache_key(**{**BASE, **change}) != cache_key(**BASE)


def test_nan_is_refused_rather_than_hashed():
    with pytest.raises(ValueError, match="nan"):
        cache_key(**{**BASE, "parameters": {"temperature": float("nan")}})
