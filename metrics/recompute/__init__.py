"""The recompute pipeline (docs/ARCHITECTURE.md): stored metric values always follow the grades.

Modules:
- `run`: one run, a keyword's evaluation's dirty keywords (or a whole evaluation) through
  metrics_engine, values written with the keyword version they were computed from;
- `means`: after each run, the evaluation's means, history, progress and automatic finish;
- `scheduling`: when runs happen, the states below.

- `marks`: every write of the keywords' versions and dirty marks.

This app owns the pipeline's state and alone writes it: the keyword's bookkeeping
(metrics.models.KeywordRecomputeMark: version, computed_version, dirty_since) through
`marks` alone, the values, means, progress and recompute error through the runs, the
evaluation's RecomputeDue mark through `scheduling` alone. judgments announces grade changes
inside their transaction (judgments.signals.grades_written) and metrics.receivers marks.

States of a keyword (its KeywordRecomputeMark; no row is version 0, clean):
- clean: `dirty_since` is NULL and `computed_version == version`;
- dirty: a grade changed (judgments.grading), a fetch stored its results (their bounds and
  slots are a run's to count), or its pool did (a sibling's grade, or a fetch that stored
  no results, with a pool metric configured), or what all of the evaluation's values
  depend on did (its metrics, a team transformer it reads grades through:
  `scheduling.evaluation_configuration_changed`): `version` went up and `dirty_since`
  holds the time it first turned dirty;
- computed: a run read the keyword at version v and stored its values labelled v; it sets
  `computed_version = v` and clears `dirty_since` only if `version` is still v. A grade
  that landed meanwhile leaves it dirty, and that run queues the next.
A keyword dirty for longer than RECOMPUTE_SWEEP_AFTER_SECONDS is queued again by the
periodic sweep, so a lost message, a stopped worker or a failed run only delays values.

States of an evaluation's runs (metrics.models.RecomputeDue, worker mode only):
- nobody answers: no row, `due_at` NULL, or `due_at` more than a grace period past
  (its run was lost): each grade that turns a keyword dirty queues a run;
- a run answers: `due_at` is set, to now by a run that starts reading, or to the future
  time of a deferred run, set before that run is sent. Grades that see the mark queue
  nothing; the run reads them, or finds their keywords dirty when it ends;
- handed over: a run ends with keywords of the evaluation still dirty; it moves `due_at`
  to its successor's time and sends it (at once when more were waiting than a run takes,
  else after RECOMPUTE_BUSY_INTERVAL_SECONDS or the debounce, so the next run reads many
  grades);
- released: a run ends with nothing dirty, or fails: `due_at` back to NULL, then one
  last look for a keyword graded in between (recompute_due_release).
With Celery eager (tests, development) runs happen inline and take no marks.
A per-process map of deferred runs (scheduling._due) saves tasks; nothing relies on it.
"""
