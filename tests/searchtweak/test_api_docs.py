"""The API docs pages load everything from this server: they work offline."""

import re

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db

# src="...", href="...", url(...) and import("...") in HTML or JavaScript.
_REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""")
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)


def references(text: str) -> list[str]:
    return [first or second for first, second in _REFERENCE.findall(text)]


@pytest.mark.parametrize("path", ["/api/docs/", "/api/docs/?script=", "/api/redoc/"])
def test_the_docs_pages_reference_no_other_host(client, path):
    response = client.get(path)
    assert response.status_code == 200
    text = response.content.decode()
    assert not re.search(r"https?://", text), "a full URL points elsewhere"
    external = [ref for ref in references(text) if _EXTERNAL.match(ref)]
    assert external == []


@pytest.mark.parametrize(("path", "assets"), [
    ("/api/docs/", ["swagger-ui-dist/swagger-ui-bundle.js",
                    "swagger-ui-dist/swagger-ui-standalone-preset.js",
                    "swagger-ui-dist/swagger-ui.css", "swagger-ui-dist/favicon-32x32.png"]),
    ("/api/redoc/", ["redoc/bundles/redoc.standalone.js"]),
])
def test_the_docs_pages_load_their_assets_from_our_static_files(client, path, assets):
    text = client.get(path).content.decode()
    for asset in assets:
        assert f"/static/drf_spectacular_sidecar/{asset}" in text
        # collectstatic (production, WhiteNoise) and runserver (DEBUG) both find it.
        assert finders.find(f"drf_spectacular_sidecar/{asset}") is not None


def test_swagger_ui_starts_from_a_script_file_not_an_inline_script(client):
    html = client.get("/api/docs/").content.decode()
    inline_scripts = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    assert inline_scripts == []
    assert '<script src="/api/docs/?script="></script>' in html
    script = client.get("/api/docs/?script=")
    assert script["Content-Type"].startswith("application/javascript")
    assert 'url: "/api/schema/"' in script.content.decode()


def test_the_docs_group_operations_by_resource_not_under_one_v1_tag(client):
    schema = client.get("/api/schema/?format=json").json()
    tag_of = {operation["operationId"]: operation["tags"]
              for path in schema["paths"].values() for operation in path.values()}
    resources = ["evaluations", "endpoints", "grading", "judges", "scales", "metrics",
                 "behaviour", "notifications", "teams", "audit"]
    assert [tag["name"] for tag in schema["tags"]] == resources
    assert all(tag["description"] for tag in schema["tags"])
    # Every operation sits under exactly one of them.
    stray = {operation: tags for operation, tags in tag_of.items()
             if len(tags) != 1 or tags[0] not in resources}
    assert stray == {}
    assert {tags[0] for tags in tag_of.values()} == set(resources)
    expected = {
        "evaluations_list": "evaluations", "evaluations_start": "evaluations",
        "query_sets_create": "evaluations", "query_sets_versions_create": "evaluations",
        "schedules_create": "evaluations", "schedules_runs_list": "evaluations",
        "endpoints_create": "endpoints", "models_test": "endpoints",
        "evaluations_next": "grading", "snapshots_grade": "grading",
        "evaluations_judgments_export": "grading", "evaluations_gold_list": "grading",
        "evaluations_gold_make": "grading", "evaluations_gold_import": "grading",
        "judges_list": "judges", "judge_runs_pause": "judges",
        "evaluation_judge_runs_start": "judges", "judge_calls_jsonl": "judges",
        "evaluations_triage": "judges", "evaluations_triage_adjudicate": "judges",
        "evaluation_judge_runs_estimate": "judges",
        "scales_list": "scales", "transformers_create": "scales",
        "evaluations_compare": "metrics", "evaluations_keywords_list": "metrics",
        "evaluations_metrics": "metrics",
        "evaluations_metric_table": "metrics", "evaluations_compare_many": "metrics",
        "evaluations_gate": "metrics", "evaluations_verdicts_list": "metrics",
        "me": "teams", "teams_invitations_create": "teams",
        "notifications_list": "notifications", "teams_webhooks_create": "notifications",
        "webhooks_test": "notifications",
        "behaviour_sources_list": "behaviour", "behaviour_source_keywords": "behaviour",
        "evaluation_behaviour_fit": "behaviour", "click_graders_list": "behaviour",
        "click_graders_create": "behaviour",
        "behaviour_sources_create": "behaviour", "behaviour_source_events": "behaviour",
        "behaviour_source_evaluation_online": "behaviour",
        "behaviour_source_evaluation_online_csv": "behaviour",
        "teams_audit_list": "audit",
    }
    assert {operation: tag_of[operation][0] for operation in expected} == expected
