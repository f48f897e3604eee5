"""Writes for evaluations and their keywords, one module per concern (no names here):

- `configuration`: create, update and clone an evaluation (its metrics, transformers,
  keywords); `config_checks`: the checks its configuration passes;
- `lifecycle`: start, retry failed keywords, pause, finish, archive, restore, delete;
- `completion`: the one rule that finishes an evaluation once complete;
- `keywords`: keyword lists (a keyword's weight and tags, cleaning, limits, the stored
  rows); `keyword_input`: typed lines and uploaded files read into keywords.

Endpoints, fetching and query sets are packages of their own: evaluations.endpoints,
evaluations.fetching, evaluations.query_sets.
"""
