"""HTTPS, HSTS and the Content-Security-Policy: on by default in production, off by the
operator's choice behind a TLS proxy, and `manage.py check --deploy` clean.

Production settings are read once at start-up from the environment, so those tests start
a Python process with DEBUG=false, as gunicorn would be.
"""

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRICT_POLICY = {
    "default-src": "'self'", "script-src": "'self'", "style-src": "'self'",
    "img-src": "'self' data: https:", "object-src": "'none'", "base-uri": "'self'",
    "frame-ancestors": "'none'", "form-action": "'self'",
}
# Requests through Django's test client inside the production-configured process.
PROBE = """
import json, django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
answers = {}
for name, secure, path in [("http_login", False, "/login/"), ("https_login", True, "/login/"),
                           ("https_api", True, "/api/v1/me/"), ("http_healthz", False, "/healthz")]:
    response = Client().get(path, secure=secure)
    answers[name] = {"status": response.status_code, "headers": dict(response.headers)}
print(json.dumps(answers))
"""


def production_env(tmp_path, **extra: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin", "DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "searchtweak.example.com,testserver",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "searchtweak.settings", **extra,
    }


def probe(tmp_path, **extra: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                          text=True, env=production_env(tmp_path, **extra), timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def directives(policy: str) -> dict[str, str]:
    parts = (part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    return {name: value for name, value in parts}


def test_production_redirects_to_https_and_sends_hsts_and_the_policy(tmp_path):
    answers = probe(tmp_path)
    assert answers["http_login"]["status"] == 301
    assert answers["http_login"]["headers"]["Location"] == "https://testserver/login/"
    for name in ("https_login", "https_api"):
        headers = answers[name]["headers"]
        assert headers["Strict-Transport-Security"] == (
            "max-age=31536000; includeSubDomains; preload"), name
        policy = directives(headers["Content-Security-Policy"])
        assert {key: policy.get(key) for key in STRICT_POLICY} == STRICT_POLICY, name
    assert answers["https_login"]["status"] == 200
    assert answers["https_api"]["status"] == 401
    # The load balancer's health check speaks plain HTTP.
    assert answers["http_healthz"]["status"] != 301


def test_behind_a_tls_proxy_the_operator_turns_redirect_and_hsts_off(tmp_path):
    answers = probe(tmp_path, SECURE_SSL_REDIRECT="false", SECURE_HSTS_SECONDS="0")
    assert answers["http_login"]["status"] == 200
    assert "Strict-Transport-Security" not in answers["https_login"]["headers"]
    # The policy stays: it is the application's, not the proxy's.
    assert "script-src 'self'" in answers["http_login"]["headers"]["Content-Security-Policy"]


def test_check_deploy_is_clean_with_the_production_defaults(tmp_path):
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "DEBUG"],
        cwd=ROOT, capture_output=True, text=True, env=production_env(tmp_path), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


@pytest.mark.django_db
def test_pages_and_the_api_carry_the_policy_in_development_too(client):
    # Development (DEBUG, plain HTTP) also shows result images from plain-HTTP engines.
    expected = {**STRICT_POLICY, "img-src": "'self' data: https: http:"}
    for path in ("/login/", "/api/v1/me/", "/api/docs/"):
        policy = directives(client.get(path)["Content-Security-Policy"])
        assert {key: policy.get(key) for key in STRICT_POLICY} == expected, path


@pytest.mark.django_db
def test_only_redoc_may_style_inline_and_its_scripts_stay_strict(client):
    policy = directives(client.get("/api/redoc/")["Content-Security-Policy"])
    assert policy["style-src"] == "'self' 'unsafe-inline'"
    assert policy["script-src"] == "'self'"
    assert policy["worker-src"] == "'self' blob:"


INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE), "an inline <script>"),
    (re.compile(r"<style\b", re.IGNORECASE), "an inline <style>"),
    (re.compile(r"\sstyle\s*=", re.IGNORECASE), "a style= attribute"),
    (re.compile(r"\son[a-z]+\s*=", re.IGNORECASE), "an on*= handler"),
    (re.compile(r"=\s*[\"']?\s*javascript:", re.IGNORECASE), "a javascript: URL"),
]
TEMPLATE_COMMENT = re.compile(r"\{#.*?#\}|\{% comment %\}.*?\{% endcomment %\}", re.DOTALL)


def test_no_template_has_inline_script_style_or_handler():
    found = [f"{path.relative_to(ROOT)}: {what}: {match.group(0)}"
             for path in sorted((ROOT / "templates").rglob("*.html"))
             for pattern, what in INLINE
             for match in pattern.finditer(TEMPLATE_COMMENT.sub("", path.read_text()))]
    assert found == []


NO_STORE = "max-age=0, no-cache, no-store, must-revalidate, private"


@pytest.mark.django_db
def test_answers_to_a_signed_in_caller_are_not_stored_by_any_cache(client, personas):
    from rest_framework.test import APIClient

    from searchtweak.services import api_token_create

    client.force_login(personas.grader)
    client.post("/settings/tokens/", {"name": "laptop"})
    # The page that shows the new key once, any other page, a refusal, the API by session.
    for path in ("/settings/tokens/", "/", "/evaluations/", "/api/v1/me/", "/teams/new/"):
        response = client.get(path)
        assert response["Cache-Control"] == NO_STORE, path
    _, key = api_token_create(user=personas.grader, name="ci")
    api = APIClient()
    for credentials in (f"Token {key}", "Token wrong"):
        api.credentials(HTTP_AUTHORIZATION=credentials)
        assert api.get("/api/v1/me/")["Cache-Control"] == NO_STORE, credentials


@pytest.mark.django_db
def test_anonymous_answers_keep_their_own_caching(client):
    # The login page is Django's, which sets never-cache itself; the health check and the
    # demo engine hold nothing private.
    assert client.get("/login/")["Cache-Control"] == NO_STORE
    assert not client.get("/healthz").has_header("Cache-Control")
    assert not client.get("/demo/search", {"q": "boots"}).has_header("Cache-Control")
