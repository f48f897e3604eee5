"""Trace three walks through the real code and write them into docs/ARCHITECTURE.md.

    .venv/bin/python scripts/architecture_walks.py            # rewrite the walk sections
    .venv/bin/python scripts/architecture_walks.py --check    # exit 1 when they are stale

The app runs as it does with no environment variables (SQLite, Celery eager, tasks on
threads of the process), on a throwaway database whose tables come from the models (what
the walks need, not the migrations' history); a server of this script on 127.0.0.1 plays
the search engine, the LLM provider and the webhook receiver. Everything is driven through
public entry points: API paths and pages with Django's test client, a Celery task by name.
The walks:

- grade: a person's grade through the grading API until the recompute stored the means;
- schedule: a due schedule ticked (its task by name), its run fetched, every result
  filled from earlier grades, finished, judged against the team's baseline, the team's
  webhook called;
- judge: a judge run on an evaluation, the model answering, until the means are stored.

Each is recorded by scripts/walk_tracer.py: the project files it enters, in order (a
project file is one of the packages in pyproject's include list), their app (top-level
package), and the hops. A *call back* is a call from one app into another that the
caller's app does not import (a signal, a registered hook or a function handed over
carries it) into an app the walk had already been in. Calls down the imports (metrics
reading judgments' scales) are not call backs.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import json
import logging
import os
import re
import sys
import tempfile
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from walk_tracer import Tracer, flatten, signal_dotted_names, signal_objects

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "ARCHITECTURE.md"
WALKS = ("grade", "schedule", "judge")
KEYWORD = "trail shoes"
METRICS = [{"code": "ndcg", "k": 10, "params": {}}]
# Kept from the caller's environment; nothing else reaches the app's settings.
KEPT_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH")


def project_packages() -> list[str]:
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = found["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted({name.rstrip("*").split(".")[0] for name in names})


def import_reach(packages: list[str]) -> dict[str, set[str]]:
    """The apps each app's import statements reach, directly or through others (every
    statement, inside functions too; migrations and commands left out)."""
    direct: dict[str, set[str]] = {package: set() for package in packages}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            if {"migrations", "management"} & set(path.relative_to(ROOT).parts):
                continue
            for node in _statements(ast.parse(path.read_text(), str(path)).body):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) \
                    and not node.level else []
                direct[package] |= {name.split(".")[0] for name in names} & set(packages)
    reach = {}
    for package in packages:
        seen, todo = set(), [package]
        while todo:
            for other in direct[todo.pop()] - seen:
                seen.add(other)
                todo.append(other)
        reach[package] = seen - {package}
    return reach


def _statements(nodes: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones too (imports are statements: no need to visit the
    expressions, most of a tree)."""
    for node in nodes:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            yield from _statements(getattr(node, field, None) or [])
        for case in getattr(node, "cases", None) or []:
            yield from _statements(case.body)


# --- the local server: search engine, LLM provider, webhook receiver ---

DOCUMENT_ID = re.compile(r'^\{"id": ("(?:[^"\\]|\\.)*")', re.MULTILINE)


class _Local(BaseHTTPRequestHandler):
    hooks: list[dict] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query).get("q", [""])[0]
        self._answer({"hits": [{"id": f"{query}-{n}", "title": f"{query} {n}"}
                               for n in (1, 2)]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path == "/hook":
            self.hooks.append(body)
            self._answer({})
            return
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        grades = [{"id": json.loads(quoted), "grade": 2, "reason": "fits"}
                  for quoted in DOCUMENT_ID.findall(prompt)]
        self._answer({"id": "walk", "object": "chat.completion", "model": body["model"],
                      "choices": [{"index": 0, "finish_reason": "stop", "message": {
                          "role": "assistant", "content": json.dumps({"grades": grades})}}],
                      "usage": {"prompt_tokens": 100, "completion_tokens": 20,
                                "total_tokens": 120}})


def serve_locally() -> str:
    server = HTTPServer(("127.0.0.1", 0), _Local)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


# --- the walks ---


class Driver:
    """A signed-in team owner calling the app through Django's test client."""

    def __init__(self, tracer: Any) -> None:
        from django.contrib.auth import get_user_model
        from django.test import Client

        self.tracer = tracer
        self.client = Client()
        self.client.force_login(get_user_model().objects.create_user("walker"))

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        response = getattr(self.client, method)(
            path, json.dumps(body) if body is not None else None,
            content_type="application/json")
        if response.status_code != status:
            raise SystemExit(f"{method.upper()} {path}: {response.status_code} "
                             f"(expected {status}): {response.content[:300]!r}")
        return response.json() if response.content else None

    def evaluation(self, model_id: int, name: str) -> int:
        created = self.call("post", "/api/v1/evaluations/", {
            "name": name, "model": model_id, "scale": "graded", "strategy": 1,
            "keywords": [KEYWORD], "metrics": METRICS, "auto_finish": False,
            "gold_rate": 0}, 201)
        self.call("post", f"/api/v1/evaluations/{created['id']}/start/")
        self.tracer.wait_idle()
        return created["id"]

    def means(self, evaluation_id: int) -> list:
        detail = self.call("get", f"/api/v1/evaluations/{evaluation_id}/")
        values = [metric["value"] for metric in detail["metrics"]]
        if None in values or not values:
            raise SystemExit(f"evaluation {evaluation_id}: means not stored: {values}")
        return values


def walks(tracer: Any, base_url: str) -> dict[str, Any]:
    """Set up a team, then trace each walk; the root segment of each."""
    from searchtweak.celery import app as celery_app

    recorded: dict[str, Any] = {}
    tracer.begin(profile=False)
    driver = Driver(tracer)
    team = driver.call("post", "/api/v1/teams/", {"name": "Walks"}, 201)
    endpoint = driver.call("post", "/api/v1/endpoints/", {
        "name": "Local engine", "url": f"{base_url}/search", "method": "GET",
        "mapper": {"documents": "hits", "id": "id", "name": "title"}}, 201)
    model = driver.call("post", "/api/v1/models/", {
        "name": "BM25", "endpoint": endpoint["id"], "params": {"q": "#query#"}}, 201)
    graded = driver.evaluation(model["id"], "Graded by a person")
    judged = driver.evaluation(model["id"], "Graded by a judge")
    judge = driver.call("post", "/api/v1/judges/", {
        "name": "Local model", "provider": "openai", "model": "walk-model",
        "base_url": f"{base_url}/v1", "api_key": "sk-walks", "batch_size": 5,
        "max_concurrent_requests": 1, "max_retries": 0, "timeout_seconds": 10}, 201)
    # A judge counts once it ran in shadow to the end (here on the evaluation it will grade).
    driver.call("post", f"/api/v1/evaluations/{judged}/judge-runs/",
                {"judge": judge["id"], "mode": "shadow"}, 201)
    tracer.wait_idle()
    driver.call("post", f"/api/v1/judges/{judge['id']}/counts/", {
        "counts": True, "override_reason": "A local model for the walks."})
    next_path = f"/api/v1/evaluations/{graded}/next/"
    first = driver.call("post", next_path, {})
    last = driver.call("post", next_path, {"snapshot": first["snapshot"], "grade": 3})
    tracer.wait_idle()

    recorded["grade"] = tracer.begin(profile=True)
    driver.call("post", next_path, {"snapshot": last["snapshot"], "grade": 1}, 204)
    tracer.wait_idle()
    tracer.begin(profile=False)
    driver.means(graded)

    driver.call("post", f"/api/v1/evaluations/{graded}/finish/")
    response = driver.client.post(f"/dashboard/evaluations/{graded}/baseline/",
                                  {"action": "set"})
    if response.status_code != 302:
        raise SystemExit(f"setting the team's baseline answered {response.status_code}")
    query_set = driver.call("post", "/api/v1/query-sets/",
                            {"name": "Shoes", "keywords": [KEYWORD]}, 201)
    schedule = driver.call("post", "/api/v1/schedules/", {
        "name": "Hourly", "model": model["id"], "query_set": query_set["id"],
        "scale": "graded", "strategy": 1, "metrics": METRICS, "interval_minutes": 60,
        "baseline": "team"}, 201)
    driver.call("post", f"/api/v1/teams/{team['id']}/webhooks/", {
        "url": f"{base_url}/hook",
        "events": ["evaluation_finished", "run_regressed", "run_improved", "run_undecided"]},
        201)
    tracer.wait_idle()

    recorded["schedule"] = tracer.begin(profile=True)
    celery_app.tasks["evaluations.schedules_tick"].delay()
    tracer.wait_idle()
    tracer.begin(profile=False)
    runs = driver.call("get", f"/api/v1/schedules/{schedule['id']}/runs/")["results"]
    if len(runs) != 1 or not runs[0].get("verdict") or not _Local.hooks:
        raise SystemExit(f"the schedule's run did not end in a verdict and a webhook: {runs}")

    recorded["judge"] = tracer.begin(profile=True)
    driver.call("post", f"/api/v1/evaluations/{judged}/judge-runs/",
                {"judge": judge["id"], "mode": "ungraded", "refresh_cache": True}, 201)
    tracer.wait_idle()
    tracer.end()
    driver.means(judged)
    return recorded


# --- what a walk shows ---


def summary(segment: Any) -> dict[str, Any]:
    """The walk's files in order with what reached each, its hops and its call backs."""
    files: list[tuple[str, str]] = []
    hops: list[Any] = []
    calls_back: list[Any] = []
    seen_hops: set[tuple] = set()
    last_hop = None
    for kind, value in flatten(segment):
        if kind == "hop":
            # One line per boundary: the same hop to the same place from elsewhere is not new.
            if (value.kind, value.label, value.target) not in seen_hops:
                seen_hops.add((value.kind, value.label, value.target))
                hops.append(value)
            last_hop = value
        elif kind == "back":
            if value not in calls_back:
                calls_back.append(value)
        elif kind == "file":
            if value not in {path for path, _ in files}:
                reached = last_hop.kind if last_hop and last_hop.target == value else "call"
                files.append((value, reached))
            last_hop = None
    return {"files": files, "hops": hops, "calls_back": calls_back}


def render(walk: dict[str, Any]) -> str:
    apps = list(dict.fromkeys(Tracer.app(path) for path, _ in walk["files"]))
    lines = ["<!-- Generated by scripts/architecture_walks.py from a trace of the code; do not "
             "edit by hand. -->", "", "| # | file | app | reached by |", "|---|---|---|---|"]
    lines += [f"| {number} | `{path}` | {Tracer.app(path)} | {reached} |"
              for number, (path, reached) in enumerate(walk["files"], start=1)]
    lines += ["", "Hops, in order:"]
    lines += [f"{number}. {hop.kind} `{hop.label}`: `{hop.source or 'the walk'}` → "
              f"`{hop.target or 'nothing of the project'}`"
              for number, hop in enumerate(walk["hops"], start=1)]
    back = "; ".join(f"`{crossing.source}` → `{crossing.target}`"
                     for crossing in walk["calls_back"]) or "none"
    lines += ["", f"**{len(walk['files'])} project files in {len(apps)} apps "
                  f"({', '.join(apps)}), {len(walk['hops'])} hops, calls back: {back}.**"]
    return "\n".join(lines)


def document_with(text: str, sections: dict[str, str]) -> str:
    for name, body in sections.items():
        start, end = f"<!-- walk:{name}:start -->", f"<!-- walk:{name}:end -->"
        if text.count(start) != 1 or text.count(end) != 1:
            raise SystemExit(f"{DOCUMENT.relative_to(ROOT)} needs one {start} … {end}")
        before, rest = text.split(start)
        text = f"{before}{start}\n{body}\n{end}{rest.split(end, 1)[1]}"
    return text


# --- running ---


def _clean_start() -> None:
    """Run again with only the kept variables (the app's defaults) and a fixed hash seed
    (set and dict orders the same every run)."""
    if os.environ.get("ARCHITECTURE_WALKS_CLEAN") == "1":
        return
    environment = {name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ}
    environment.update(ARCHITECTURE_WALKS_CLEAN="1", PYTHONHASHSEED="0")
    os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]],
              environment)


def _django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "searchtweak.settings"
    import django
    from django.apps import apps
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    # The walks' own log lines (tasks succeeded, logins) say nothing the document shows.
    logging.disable(logging.INFO)
    settings.MIGRATION_MODULES = {config.label: None for config in apps.get_app_configs()}
    call_command("migrate", run_syncdb=True, verbosity=0)


def _import_everything(packages: list[str]) -> None:
    """Every project module imported before tracing, so no walk records an import's work
    (wsgi and asgi left out: importing them starts the server's threads)."""
    import importlib
    import pkgutil

    for package in packages:
        module = importlib.import_module(package)
        for found in pkgutil.walk_packages(module.__path__, f"{package}."):
            if not re.search(r"\.(migrations|wsgi|asgi)(\.|$)", found.name):
                importlib.import_module(found.name)


def trace() -> dict[str, str]:
    sys.path.insert(0, str(ROOT))
    packages = project_packages()
    with tempfile.TemporaryDirectory(prefix="architecture-walks-") as folder:
        _django(Path(folder) / "walks.sqlite3")
        _import_everything(packages)
        from celery.utils.dispatch.signal import Signal as CelerySignal
        from django.dispatch import Signal

        from searchtweak.celery import app as celery_app

        signal_types = (Signal, CelerySignal)
        tracer = Tracer(root=ROOT, packages=set(packages), reach=import_reach(packages),
                        tasks={inspect.unwrap(task.run).__code__: name
                               for name, task in sorted(celery_app.tasks.items())
                               if hasattr(inspect.unwrap(task.run), "__code__")},
                        signal_names=signal_dotted_names(signal_objects(signal_types)),
                        signal_types=signal_types)
        base_url = serve_locally()
        tracer.install()
        recorded = walks(tracer, base_url)
        from django.db import connections

        connections.close_all()
    return {name: render(summary(recorded[name])) for name in WALKS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when docs/ARCHITECTURE.md and a fresh trace disagree")
    args = parser.parse_args(argv)
    _clean_start()
    text = DOCUMENT.read_text()
    fresh = document_with(text, trace())
    if args.check:
        if fresh != text:
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(keepends=True), fresh.splitlines(keepends=True),
                "docs/ARCHITECTURE.md", "a fresh trace"))
            print("docs/ARCHITECTURE.md's walks are stale: run scripts/architecture_walks.py",
                  file=sys.stderr)
            return 1
        return 0
    if fresh != text:
        DOCUMENT.write_text(fresh)
        print(f"wrote {DOCUMENT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
