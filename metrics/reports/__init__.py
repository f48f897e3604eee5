"""The reports: what the pages and the API show of the stored values (docs/ARCHITECTURE.md).

Reads only; the pages and API modules at the app's root (views*.py, api*.py, export_api.py)
call these, and the verdicts store what they decide (metrics.models.RegressionVerdict).
"""
