"""Reads for the leaderboards page: search models ranked by one metric on the keywords
their latest evaluations share, and graders by grades given and agreement with the majority.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Case, Count, F, Max, Min, OuterRef, Q, Subquery, Sum, Value, When

import metrics_engine as core
from evaluations.models import Evaluation, EvaluationMetric, SearchModel
from judgments.gold_accuracy import NO_ANSWERS, GoldAccuracy, team_gold_accuracy
from judgments.models import FeedbackSlot
from metrics.models import KeywordMetricValue
from metrics.selectors import metric_key, metric_key_label, metric_key_slug
from searchtweak.models import Membership, Team, User

# --- leaderboards --------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelStanding:
    model: SearchModel
    evaluation: Evaluation
    value: float | None  # mean over the shared keywords
    keyword_count: int  # shared keywords with a value
    stored_value: float | None  # the evaluation's own mean over all its keywords


@dataclass(frozen=True)
class ModelLeaderboard:
    choices: list[tuple[str, str]]  # (slug, label)
    chosen: str
    shared_keyword_count: int
    standings: list[ModelStanding]


def model_leaderboard(*, team: Team, metric: str = "") -> ModelLeaderboard:
    """Search models ranked by one metric over their latest finished evaluation that has it,
    each averaged over the keywords all those evaluations share (a fair race)."""
    configs = list(EvaluationMetric.objects.filter(
        evaluation__team=team, evaluation__status=Evaluation.Status.FINISHED,
        evaluation__archived_at=None,
    ).select_related("evaluation__model").with_stored_mean()
        .order_by("-evaluation__finished_at", "-evaluation_id"))
    by_key: dict[str, list[EvaluationMetric]] = defaultdict(list)
    labels: dict[str, str] = {}
    for config in configs:
        slug = metric_key_slug(metric_key(config))
        by_key[slug].append(config)
        labels[slug] = metric_key_label(metric_key(config))
    choices = sorted(labels.items(), key=lambda item: item[1])
    chosen = metric if metric in by_key else (choices[0][0] if choices else "")
    latest: dict[int, EvaluationMetric] = {}
    for config in by_key.get(chosen, []):
        latest.setdefault(config.evaluation.model_id, config)
    values: dict[int, dict[str, float | None]] = defaultdict(dict)
    for metric_id, text, value in KeywordMetricValue.objects.filter(
            metric_id__in=[c.pk for c in latest.values()]
    ).values_list("metric_id", "keyword__normalized_text", "value"):
        values[metric_id][text] = value
    keyword_sets = [set(values[c.pk]) for c in latest.values()]
    shared = set.intersection(*keyword_sets) if keyword_sets else set()
    standings = []
    for config in latest.values():
        value, keyword_count = core.mean_over_keywords(values[config.pk][t] for t in shared)
        standings.append(ModelStanding(
            model=config.evaluation.model, evaluation=config.evaluation,
            value=value, keyword_count=keyword_count,
            stored_value=config.value,
        ))
    standings.sort(key=lambda s: (s.value is None, -(s.value or 0.0), s.model.name))
    return ModelLeaderboard(choices=choices, chosen=chosen, shared_keyword_count=len(shared),
                            standings=standings)


@dataclass(frozen=True)
class GraderStanding:
    username: str
    grades_given: int
    with_majority: int  # their grades on results where the three graders had a majority
    agreed: int  # ... of which matched that majority
    kind: str = User.KIND_PERSON  # or KIND_JUDGE: an LLM judge's account (User.is_judge)
    judge_name: str = ""
    # Answers to gold items: accuracy, error, drift, below the bar (judgments.gold_accuracy).
    gold: GoldAccuracy = NO_ANSWERS

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.with_majority if self.with_majority else None

    @property
    def label(self) -> str:
        """What the board calls the grader: a judge by its name, a person by username."""
        return self.judge_name or self.username


def grader_leaderboard(*, team: Team) -> list[GraderStanding]:
    """Members and the team's LLM judges ranked by grades given, with how often their grade
    matched the majority on results graded by three (a result whose three grades all differ
    has no majority and is left out), and how they answer gold items. Counting is done in
    SQL; the share is computed here."""
    given = dict(
        FeedbackSlot.objects.filter(evaluation__team=team, grade__isnull=False,
                                    user__isnull=False, reused_from__isnull=True)
        .values("user_id").annotate(n=Count("id")).values_list("user_id", "n")
    )
    # Per graded slot, the other graded slots of its snapshot: how many, how many share its
    # grade, their lowest and highest grade (equal: the other two agree, a majority).
    others = (FeedbackSlot.objects.filter(snapshot_id=OuterRef("snapshot_id"),
                                          grade__isnull=False)
              .exclude(pk=OuterRef("pk")).order_by().values("snapshot_id"))

    def of_others(aggregate) -> Subquery:
        return Subquery(others.annotate(result=aggregate).values("result"))

    slots = (FeedbackSlot.objects.filter(evaluation__team=team, grade__isnull=False,
                                         user__isnull=False, reused_from__isnull=True)
             .annotate(others=of_others(Count("pk")),
                       same=of_others(Count("pk", filter=Q(grade=OuterRef("grade")))),
                       others_lo=of_others(Min("grade")), others_hi=of_others(Max("grade")))
             .filter(others=2))
    agreement = {
        row["user_id"]: (row["agreed"], row["majority"])
        for row in slots.order_by().values("user_id").annotate(
            agreed=Sum(Case(When(same__gte=1, then=Value(1)), default=Value(0))),
            majority=Sum(Case(When(Q(same__gte=1) | Q(others_lo=F("others_hi")),
                                   then=Value(1)), default=Value(0))),
        )
    }
    # People are the team's members; judges are the team's judges' accounts, named after
    # their judge (the `judge` relation belongs to the judges app: read, not imported).
    graders = [(user_id, username, User.KIND_PERSON, "") for user_id, username in
               Membership.objects.filter(team=team, user__is_judge=False)
               .values_list("user_id", "user__username")]
    graders += [(user_id, username, User.KIND_JUDGE, name) for user_id, username, name in
                User.objects.filter(is_judge=True, judge__team=team)
                .values_list("pk", "username", "judge__name")]
    gold = team_gold_accuracy(team_id=team.pk)
    standings = [
        GraderStanding(
            username=username, grades_given=given.get(user_id, 0),
            agreed=int(agreement.get(user_id, (0, 0))[0] or 0),
            with_majority=int(agreement.get(user_id, (0, 0))[1] or 0),
            kind=kind, judge_name=judge_name, gold=gold.get(user_id, NO_ANSWERS),
        )
        for user_id, username, kind, judge_name in graders
    ]
    standings.sort(key=lambda s: (-s.grades_given, s.label))
    return standings
