from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save, pre_delete

        from evaluations.events import evaluation_transitioned
        from evaluations.models import Evaluation, EvaluationMetric, Keyword
        from evaluations.signals import keyword_traffic_changed, snapshots_created
        from judgments.adaptive import register_bounds_width
        from judgments.grading import register_version_bump_cte
        from judgments.models import Transformer
        from judgments.queries import register_decisive_key
        from judgments.signals import grades_written
        from metrics import receivers, verdict_receivers
        from metrics.queue_order import decisive_key_sql, first_metric_bounds_width
        from metrics.recompute.marks import keyword_version_bump_cte

        grades_written.connect(receivers.on_grades_written, dispatch_uid="metrics.grades")
        # The keyword versions are this app's: the one-statement grade bumps them with it.
        register_version_bump_cte(keyword_version_bump_cte)
        # So are the bounds a decisive evaluation's queue hands out by.
        register_decisive_key(decisive_key_sql)
        # And the bounds by which an adaptive evaluation opens more slots on a top result.
        register_bounds_width(first_metric_bounds_width)
        snapshots_created.connect(receivers.on_snapshots_created,
                                  dispatch_uid="metrics.snapshots_created")
        # New weights or tags regroup the per-segment sums.
        keyword_traffic_changed.connect(receivers.on_keyword_traffic_changed,
                                        dispatch_uid="metrics.keyword_traffic_changed")
        # Adding, changing or removing a metric recomputes the evaluation.
        for signal in (post_save, post_delete):
            signal.connect(receivers.on_metric_configs_changed, sender=EvaluationMetric,
                           dispatch_uid=f"metrics.configs.{signal is post_save}")
            # So does a team transformer the evaluation reads its grades through.
            signal.connect(receivers.on_team_transformers_changed, sender=Transformer,
                           dispatch_uid=f"metrics.transformers.{signal is post_save}")
        # Deleting keywords takes their values out of their evaluation's running sums.
        pre_delete.connect(receivers.on_keyword_deleting, sender=Keyword,
                           dispatch_uid="metrics.keyword_deleting")
        # Deleting an evaluation takes its grades out of the team's pool.
        pre_delete.connect(receivers.on_evaluation_deleting, sender=Evaluation,
                           dispatch_uid="metrics.evaluation_deleting")
        # A finished evaluation is judged against its team's baseline.
        evaluation_transitioned.connect(verdict_receivers.on_evaluation_transitioned,
                                        dispatch_uid="metrics.verdict_on_finish")
