from urllib.parse import parse_qsl, urlsplit

import pytest
import requests

from searchtweak.envvars import group_roles_parse
from sso.provider import provider_forget
from tests.sso.fake_idp import CLIENT_ID, CLIENT_SECRET, FakeIdp, Person


@pytest.fixture
def idp(settings):
    """A fake provider on 127.0.0.1 with alice in it, and SearchTweak configured for it."""
    with FakeIdp() as provider:
        provider.people["alice"] = Person(sub="alice-sub-1", email="alice@example.com",
                                          given_name="Alice", family_name="Liddell")
        settings.OIDC_DISCOVERY_URL = provider.discovery_url
        settings.OIDC_RP_CLIENT_ID = CLIENT_ID
        settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
        settings.OIDC_PROVIDER_NAME = "Fake IdP"
        settings.OIDC_GROUP_ROLES = group_roles_parse([])
        settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS,
                                            "sso.backends.OidcBackend"]
        provider_forget()
        yield provider
        provider_forget()


def callback_url(client, idp: FakeIdp, username: str, *, next_url: str = "") -> str:
    """Start a sign-in in `client`, sign in as `username` at the provider's form; the
    callback path (with code and state) the provider sends the browser back to."""
    start = client.get("/sso/login/", {"next": next_url} if next_url else {})
    assert start.status_code == 302, start.content
    authorize = urlsplit(start["Location"])
    assert f"{authorize.scheme}://{authorize.netloc}{authorize.path}" == f"{idp.url}/authorize"
    query = dict(parse_qsl(authorize.query))
    answer = requests.post(f"{idp.url}/authorize", data={**query, "username": username},
                           allow_redirects=False, timeout=5)
    assert answer.status_code == 302, answer.text
    back = urlsplit(answer.headers["Location"])
    assert back.netloc == "testserver" and back.path == "/sso/callback/"
    return f"{back.path}?{back.query}"
