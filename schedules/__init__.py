"""Schedules ("watches"): a search model re-evaluated over a query set at due times, each
run judged against a baseline."""
