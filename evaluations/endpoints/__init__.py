"""Endpoints (a search engine's HTTP API) and search models (one way of querying one).

- `services`: create, update, delete (archive when used), restore, the one-off test query;
- `mapper`: reading documents out of an engine's JSON answer;
- `forms`, `views`: their pages; `api`: their REST API.

The models are in evaluations.models.endpoints, the access functions in
evaluations.selectors.
"""
