"""The reports: what the pages and the API show of the stored values (docs/ARCHITECTURE.md).

Modules:
- the evaluation dashboard: `cards` (each metric against a reference), `agreement`
  (coverage, ties, kappa), `distribution` (one metric's values or histogram),
  `keyword_table` (the per-keyword table and its pages) over `keyword_snapshots` (the
  slots a viewer may see);
- `team_overview` (the team dashboard), `metric_history` (a search model's history),
  `charts` (the SVG they are drawn with);
- `comparisons` (two evaluations), `compare_many` over `compare_many_stats` (2 to 10);
- `verdicts` (a run against a baseline, stored as RegressionVerdict; the gate's rule);
- `leaderboards` (search models and graders).

All are reads but the verdicts' store. The pages and API at the app's root (views*.py,
api*.py, export_api.py) call them; what they compare by and against (a configured metric's
identity, the team's baseline) is metrics.selectors'.
"""
