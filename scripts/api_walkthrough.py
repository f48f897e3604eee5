#!/usr/bin/env python
"""Drive SearchTweak through its documented REST API only, end to end.

    python scripts/api_walkthrough.py --base-url http://127.0.0.1:8000 --token KEY

The token's owner needs the admin role (or higher) in their current team: get one on the
API tokens page (/settings/tokens/) or with `python manage.py api_token USERNAME`. The
script creates an endpoint for the demo search engine (or --search-url), a model and an
evaluation, starts it, polls until the results are fetched, grades every result, reads
the metrics and exports the judgments. It exits 0 when every step answered as documented.
"""

import argparse
import sys
import time

import httpx

DEMO_MAPPER = {"documents": "hits", "id": "id", "name": "title", "image": "image",
               "fields": {"Brand": "brand", "Price": "price"}}
KEYWORDS = ["running shoes", "laptop", "red dress"]


class StepFailed(Exception):
    pass


def expect(response: httpx.Response, status: int, step: str) -> dict | list | None:
    if response.status_code != status:
        raise StepFailed(f"{step}: expected {status}, got {response.status_code}: "
                         f"{response.text[:500]}")
    print(f"ok  {step}")
    return response.json() if response.content and "json" in response.headers.get(
        "content-type", "") else None


def grade_for(position: int) -> int:
    """A deterministic judgment: earlier results are judged more relevant."""
    return max(0, 3 - (position - 1) // 2)


def walkthrough(client: httpx.Client, *, search_url: str, timeout: float) -> dict:
    me = expect(client.get("/api/v1/me/"), 200, "GET /me/ with the token")
    if me["current_team"] is None:
        raise StepFailed("the token's user has no current team")
    suffix = time.strftime("%Y%m%d-%H%M%S")
    endpoint = expect(client.post("/api/v1/endpoints/", json={
        "name": f"Walkthrough engine {suffix}", "url": search_url, "method": "GET",
        "headers": {}, "mapper": DEMO_MAPPER}), 201, "POST /endpoints/")
    model = expect(client.post("/api/v1/models/", json={
        "name": f"Walkthrough model {suffix}", "endpoint": endpoint["id"],
        "params": {"q": "#query#", "size": "5"}, "body": None, "headers": {}}),
        201, "POST /models/")
    tested = expect(client.post(f"/api/v1/models/{model['id']}/test/", json={"query": "shoes"}),
                    200, "POST /models/{id}/test/")
    if not tested.get("documents"):
        raise StepFailed(f"the model test returned no documents: {tested}")
    evaluation = expect(client.post("/api/v1/evaluations/", json={
        "name": f"Walkthrough {suffix}", "model": model["id"], "scale": "graded",
        "strategy": 1, "keywords": KEYWORDS,
        "metrics": [{"code": "ndcg", "k": 5, "params": {}},
                    {"code": "precision", "k": 5, "params": {}}]}),
        201, "POST /evaluations/")
    evaluation_id = evaluation["id"]
    expect(client.post(f"/api/v1/evaluations/{evaluation_id}/start/"), 200,
           "POST /evaluations/{id}/start/")
    deadline = time.monotonic() + timeout
    while True:
        detail = expect(client.get(f"/api/v1/evaluations/{evaluation_id}/"), 200,
                        "GET /evaluations/{id}/ (poll)")
        if detail["status"] == "active":
            break
        if detail["status"] not in ("pending", "fetching") or time.monotonic() > deadline:
            raise StepFailed(f"the evaluation did not become active: {detail['status']}")
        time.sleep(0.5)
    graded = 0
    while True:
        response = client.post(f"/api/v1/evaluations/{evaluation_id}/next/")
        if response.status_code == 204:
            print("ok  POST /evaluations/{id}/next/ -> 204, nothing left")
            break
        slot = expect(response, 200, "POST /evaluations/{id}/next/")
        expect(client.post(f"/api/v1/snapshots/{slot['snapshot']}/grade/",
                           json={"grade": grade_for(slot["position"])}),
               200, "POST /snapshots/{id}/grade/")
        graded += 1
    if graded == 0:
        raise StepFailed("the engine returned no results to grade")
    # Values are recomputed after each grade (in workers when a broker is configured).
    while True:
        detail = expect(client.get(f"/api/v1/evaluations/{evaluation_id}/"), 200,
                        "GET /evaluations/{id}/ (metrics)")
        values = {f"{m['code']}@{m['k']}": m["value"] for m in detail["metrics"]}
        if all(value is not None for value in values.values()) and detail["progress"] == 100:
            break
        if time.monotonic() > deadline:
            raise StepFailed(f"metrics still missing: {values}")
        time.sleep(0.5)
    keywords = expect(client.get(f"/api/v1/evaluations/{evaluation_id}/keywords/"), 200,
                      "GET /evaluations/{id}/keywords/")
    if keywords["count"] != len(KEYWORDS):
        raise StepFailed(f"expected {len(KEYWORDS)} keywords, got {keywords['count']}")
    exported = client.get(f"/api/v1/evaluations/{evaluation_id}/judgments/",
                          params={"format": "csv"})
    expect(exported, 200, "GET /evaluations/{id}/judgments/?format=csv")
    lines = exported.text.splitlines()
    if lines[0] != "keyword,doc_id,grade" or len(lines) - 1 != graded:
        raise StepFailed(f"unexpected export: {lines[:3]}… ({len(lines) - 1} rows)")
    return {"evaluation": evaluation_id, "graded": graded, "metrics": values}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True)
    parser.add_argument("--search-url", default="",
                        help="The engine to evaluate (default: <base-url>/demo/search).")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    base_url = args.base_url.rstrip("/")
    with httpx.Client(base_url=base_url, timeout=30,
                      headers={"Authorization": f"Token {args.token}"}) as client:
        try:
            summary = walkthrough(client, search_url=args.search_url or f"{base_url}/demo/search",
                                  timeout=args.timeout)
        except (StepFailed, httpx.HTTPError) as error:
            print(f"FAILED {error}", file=sys.stderr)
            return 1
    print(f"Evaluation {summary['evaluation']}: {summary['graded']} results graded, "
          + ", ".join(f"{name} = {value:.4f}" for name, value in summary["metrics"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
