"""LLM judges: models that grade beside people, in the same slots."""
