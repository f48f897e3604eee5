"""Static files and the favicon are served in every mode, collected or not; log lines once."""

import json
import subprocess
import sys

import pytest

from tests.searchtweak.test_security_headers import ROOT, production_env

# Production settings with STATIC_ROOT pointed at an empty directory: nothing collected.
PROBE = """
import json, sys, django
import searchtweak.settings as configured
configured.STATIC_ROOT = sys.argv[1]
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
answers = {}
for path in ("/static/css/app.css", "/static/js/app.js", "/favicon.ico"):
    response = Client().get(path, secure=True)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    answers[path] = {"status": response.status_code, "type": response.get("Content-Type"),
                     "size": len(body)}
print(json.dumps(answers))
"""


def test_with_debug_off_and_nothing_collected_the_pages_are_still_styled(tmp_path):
    empty = tmp_path / "staticfiles"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-c", PROBE, str(empty)], cwd=ROOT,
                          capture_output=True, text=True, env=production_env(tmp_path),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    css = answers["/static/css/app.css"]
    assert css["status"] == 200 and css["type"].startswith("text/css")
    assert css["size"] == (ROOT / "static/css/app.css").stat().st_size
    assert answers["/static/js/app.js"]["status"] == 200
    icon = answers["/favicon.ico"]
    assert icon["status"] == 200 and icon["type"] in ("image/x-icon", "image/vnd.microsoft.icon")


@pytest.mark.django_db
def test_the_favicon_is_an_icon_not_a_404(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    body = b"".join(response.streaming_content)
    # An ICO file: reserved 0, type 1 (icon), then the number of images.
    assert body[:4] == b"\x00\x00\x01\x00" and int.from_bytes(body[4:6], "little") >= 2
    # Every page points at it.
    assert '<link rel="icon" href="/favicon.ico"' in client.get("/login/").content.decode()


LOG_PROBE = """
import logging, django
django.setup()
logging.getLogger("django.request").warning("one-line-please")
logging.getLogger("judgments").warning("app-line-please")
"""


def test_the_development_server_prints_each_log_line_once(tmp_path):
    # The defaults: DEBUG on, as `make run` starts the development server.
    done = subprocess.run([sys.executable, "-c", LOG_PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE":
                               "searchtweak.settings",
                               "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert output.count("one-line-please") == 1, output
    assert output.count("app-line-please") == 1, output
