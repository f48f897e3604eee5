"""Fetching an evaluation's keywords: one search request per keyword, claimed, sent in
threads and stored as snapshots.

- `search_requests`: build, send and map one keyword's request (no database access);
- `dispatch`: hand keywords to the fetch tasks after commit, and again when a task is lost;
- `services`: what a fetch task does: claim its keywords, request them, store the results,
  and move the evaluation from fetching to active.
"""
