"""A small but real OpenID provider on 127.0.0.1 for the single sign-on tests.

It serves what a sign-in uses: the discovery document, the JWKS (one RSA key made here),
the authorization endpoint (a login form; posting a username redirects back with a code and
the state), the token endpoint (checks the client's secret, the code, the redirect URI and
the PKCE verifier; answers an RS256 ID token) and userinfo. `tweaks` makes the next ID
tokens misbehave as a test asks: signed with a key the JWKS does not hold but under its
kid, expired, for another audience, from another issuer.
"""

import base64
import hashlib
import html
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

CLIENT_ID = "searchtweak"
CLIENT_SECRET = "fake-client-secret"
KID = "fake-key-1"


@dataclass
class Person:
    sub: str
    email: str
    groups: list[str] = field(default_factory=list)
    given_name: str = ""
    family_name: str = ""
    email_verified: bool = True


class FakeIdp:
    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.people: dict[str, Person] = {}
        self.codes: dict[str, dict] = {}
        self.tokens: dict[str, str] = {}
        self.tweaks: dict[str, object] = {}
        self.token_requests = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        # shutdown() waits for the serving loop to look at its flag every poll_interval
        # (0.5 s by default, which every test with the provider paid at its end).
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.01}, daemon=True)

    def __enter__(self) -> "FakeIdp":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def discovery_url(self) -> str:
        return f"{self.url}/.well-known/openid-configuration"

    def discovery(self) -> dict:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "userinfo_endpoint": f"{self.url}/userinfo",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    def jwks(self) -> dict:
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]}

    def grant(self, *, username: str, query: dict) -> str:
        """A code for `username`, as the login form's post makes; the redirect's URL."""
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"username": username, **query}
        return query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})

    def id_token(self, person: Person, nonce: str) -> str:
        now = int(time.time())
        claims = {"iss": self.tweaks.get("iss", self.url), "sub": person.sub,
                  "aud": self.tweaks.get("aud", CLIENT_ID), "iat": now,
                  "exp": now + int(self.tweaks.get("exp_in", 300)), "nonce": nonce,
                  "email": person.email, "email_verified": person.email_verified}
        key = self.other_key if self.tweaks.get("other_key") else self.key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})

    def token(self, form: dict) -> tuple[int, dict]:
        self.token_requests += 1
        grant = self.codes.pop(form.get("code", ""), None)
        if (form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET):
            return 401, {"error": "invalid_client"}
        if grant is None or grant["redirect_uri"] != form.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}
        challenge = base64.urlsafe_b64encode(hashlib.sha256(
            form.get("code_verifier", "").encode()).digest()).rstrip(b"=").decode()
        if challenge != grant.get("code_challenge"):
            return 400, {"error": "invalid_grant", "error_description": "PKCE"}
        person = self.people[grant["username"]]
        access = secrets.token_urlsafe(16)
        self.tokens[access] = grant["username"]
        return 200, {"access_token": access, "token_type": "Bearer", "expires_in": 300,
                     "id_token": self.id_token(person, grant.get("nonce", ""))}

    def userinfo(self, authorization: str) -> tuple[int, dict]:
        username = self.tokens.get(authorization.removeprefix("Bearer "))
        if username is None:
            return 401, {"error": "invalid_token"}
        person = self.people[username]
        return 200, {"sub": person.sub, "email": person.email,
                     "email_verified": person.email_verified, "groups": person.groups,
                     "given_name": person.given_name, "family_name": person.family_name,
                     "preferred_username": username}


LOGIN_FORM = """<!doctype html><title>Fake IdP</title><h1>Fake IdP sign-in</h1>
<form method="post" action="/authorize">{hidden}
<label for="who">Username</label><input id="who" name="username">
<button type="submit">Sign in at the IdP</button></form>"""


def _handler(idp: FakeIdp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _json(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _form(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            parsed = parse_qs(self.rfile.read(length).decode())
            return {name: values[0] for name, values in parsed.items()}

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/.well-known/openid-configuration":
                return self._json(200, idp.discovery())
            if parts.path == "/jwks":
                return self._json(200, idp.jwks())
            if parts.path == "/userinfo":
                return self._json(*idp.userinfo(self.headers.get("Authorization", "")))
            if parts.path == "/authorize":
                query = {name: values[0] for name, values in parse_qs(parts.query).items()}
                hidden = "".join(
                    f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}">'
                    for name, value in query.items())
                data = LOGIN_FORM.format(hidden=hidden).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return None
            return self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            form = self._form()
            if self.path == "/token":
                return self._json(*idp.token(form))
            if self.path == "/authorize":
                username = form.pop("username", "")
                if username not in idp.people:
                    return self._json(403, {"error": "unknown user"})
                self.send_response(302)
                self.send_header("Location", idp.grant(username=username, query=form))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return self._json(404, {"error": "not_found"})

    return Handler
