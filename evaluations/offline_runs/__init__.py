"""Offline runs: a search model whose rankings come from an uploaded run file, not an
endpoint.

- `parsing`: read a TREC run or JSON Lines file into rankings per keyword (pure, no
  Django), errors naming the line and the field;
- `services`: store a parsed run for a model, and hand a fetch its rankings;
- `api`: upload a run file for a model.
"""
