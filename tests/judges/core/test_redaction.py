"""No credential survives in the redacted view of a request."""

import json

import httpx

from judges.core.providers import Anthropic, OpenAICompatible
from judges.core.redaction import MASK, redacted, scrub, secrets_of

KEY = "sk-live-abcdefghijklmnop"


def test_authorization_keeps_its_scheme_and_loses_the_token():
    request = OpenAICompatible(model="m").build_request(
        system="s", user="u", schema={}, parameters={}, api_key=KEY)
    view = redacted(request)
    assert view["headers"]["authorization"] == f"Bearer {MASK}"
    assert view["method"] == "POST" and view["url"] == "https://api.openai.com/v1/chat/completions"
    assert view["body"]["messages"][1] == {"role": "user", "content": "u"}
    assert KEY not in json.dumps(view)


def test_anthropic_x_api_key_is_masked_and_the_version_is_kept():
    request = Anthropic(model="m").build_request(system="s", user="u", schema={},
                                                 parameters={}, api_key=KEY)
    headers = redacted(request)["headers"]
    assert headers["x-api-key"] == MASK
    assert headers["anthropic-version"] == "2023-06-01"


def test_azure_api_key_header_query_keys_and_a_key_pasted_into_the_body_are_masked():
    request = httpx.Request(
        "POST", "http://127.0.0.1:9/v1/chat?api-version=1&key=qkey-123456",
        headers={"api-key": KEY, "X-Other": "visible"},
        content=json.dumps({"note": f"my key is {KEY}", "other": "qkey-123456"}).encode())
    view = redacted(request)
    assert view["headers"] == {**view["headers"], "api-key": MASK, "x-other": "visible"}
    # urlencode percent-encodes the mask's brackets.
    assert view["url"] == "http://127.0.0.1:9/v1/chat?api-version=1&key=%5Bredacted%5D"
    assert view["body"] == {"note": f"my key is {MASK}", "other": MASK}


def test_secrets_are_replaced_longest_first_and_tiny_values_are_left_alone():
    request = httpx.Request("GET", "http://127.0.0.1/", headers={
        "Authorization": f"Bearer {KEY}", "x-api-key": "abc"})
    assert secrets_of(request) == [f"Bearer {KEY}", KEY]
    assert scrub(f"Authorization: Bearer {KEY} / {KEY}", secrets_of(request)) == (
        f"Authorization: {MASK} / {MASK}")
