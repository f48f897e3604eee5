"""Reads for the evaluations pages and API, and the access function of each object type."""

from dataclasses import dataclass

from django.db.models import Count, Min, Prefetch, Q, QuerySet
from django.http import Http404

from evaluations.models import (
    Endpoint,
    Evaluation,
    EvaluationMetric,
    Keyword,
    SearchModel,
    Snapshot,
)
from evaluations.services.keywords import KeywordEntry
from searchtweak import access
from searchtweak.models import Role, User

# An endpoint's configuration (its headers with the secret ones masked, mapper, timeout)
# and a search model's (its headers and body) are read by whoever edits them and nobody
# else: the edit pages, the API's detail and the API's lists all ask for this role. The
# list pages show every member the rest (names, URL, method, parameters).
CONFIGURATION_ROLE = Role.ADMIN


def configuration_team_ids(*, user: User) -> set[int]:
    """The teams whose endpoints and search models the user may read in full."""
    return set(access.visible_team_ids(user=user, minimum_role=CONFIGURATION_ROLE))


def endpoint_get_for_user(*, user: User, endpoint_id: int,
                          minimum_role: str = Role.GRADER) -> Endpoint:
    return access.row_get_for_user(Endpoint.objects.select_related("team"), user=user,
                                   pk=endpoint_id, minimum_role=minimum_role, what="endpoint")


def search_model_get_for_user(*, user: User, model_id: int,
                              minimum_role: str = Role.GRADER) -> SearchModel:
    return access.row_get_for_user(SearchModel.objects.select_related("team", "endpoint"),
                                   user=user, pk=model_id, minimum_role=minimum_role,
                                   what="search model")


def evaluation_get_for_user(*, user: User, evaluation_id: int,
                            minimum_role: str = Role.GRADER) -> Evaluation:
    return access.row_get_for_user(
        Evaluation.objects.select_related("team", "model__endpoint",
                                          "query_set_version__query_set")
        .with_recompute_state(),
        user=user, pk=evaluation_id, minimum_role=minimum_role, what="evaluation")


def evaluations_get_for_user(*, user: User, evaluation_ids: list[int],
                             minimum_role: str = Role.GRADER) -> list[Evaluation]:
    """Several evaluations at once, in the order asked, in two queries whatever their
    number (the user's teams, then the rows): "No such evaluation." (404) when any is
    missing or another team's, as `evaluation_get_for_user` answers for one. A team where
    the user holds less than `minimum_role` counts as another team's (404, not 403: the
    rows may span teams, and no one of them is named)."""
    team_ids = access.visible_team_ids(user=user, minimum_role=minimum_role)
    rows = {e.pk: e for e in Evaluation.objects.select_related("team", "model").filter(
        pk__in=evaluation_ids, team_id__in=team_ids)}
    if any(pk not in rows for pk in evaluation_ids):
        raise Http404("No such evaluation.")
    return [rows[pk] for pk in evaluation_ids]


def keyword_get_for_user(*, user: User, keyword_id: int,
                         minimum_role: str = Role.GRADER) -> Keyword:
    return access.row_get_for_user(
        Keyword.objects.select_related("evaluation__team"), user=user, pk=keyword_id,
        minimum_role=minimum_role, what="keyword",
        team_id_of=lambda keyword: keyword.evaluation.team_id)


def keyword_snapshots(*, keyword: Keyword,
                      visibility: access.GradeVisibility) -> QuerySet[Snapshot]:
    """The keyword's results in position order, each with the graded slots `visibility`
    lets the viewer see (a grader: their own only) as `graded_slots` (slot order), with the
    grader and, for an LLM judge's account, its judge loaded: four queries whatever the
    number of results."""
    # Slots are judgments' model and a judge the judges app's: both sit above evaluations,
    # so they are reached through the relations they declared, never imported.
    slots = Snapshot._meta.get_field("slots").related_model.objects
    return keyword.snapshots.order_by("position").prefetch_related(Prefetch(
        "slots", to_attr="graded_slots",
        queryset=slots.filter(visibility.slots(), grade__isnull=False).select_related("user")
        .order_by("index").prefetch_related("user__judge"),
    ))


# --- lists -------------------------------------------------------------------------------


def endpoints_of_team(*, team_id: int, archived: bool = False) -> QuerySet[Endpoint]:
    """The team's active endpoints, or its archived ones."""
    return Endpoint.objects.filter(team_id=team_id, archived_at__isnull=not archived).annotate(
        model_count=Count("models")).order_by("name", "id")


def search_models_of_team(*, team_id: int, archived: bool = False) -> QuerySet[SearchModel]:
    """The team's active search models, or its archived ones."""
    return SearchModel.objects.filter(team_id=team_id, archived_at__isnull=not archived) \
        .select_related("endpoint").annotate(evaluation_count=Count("evaluations")) \
        .order_by("name", "id")


def evaluations_of_team(*, team_id: int, archived: bool = False,
                        status: str = "") -> QuerySet[Evaluation]:
    """The team's active evaluations, or its archived ones."""
    evaluations = evaluations_with_counts(
        Evaluation.objects.filter(team_id=team_id, archived_at__isnull=not archived)
        .select_related("model")
    ).prefetch_related(Prefetch(
        "metric_configs",
        queryset=EvaluationMetric.objects.with_stored_mean().order_by("position", "id")))
    return evaluations.filter(status=status) if status else evaluations


def evaluations_with_counts(evaluations: QuerySet[Evaluation]) -> QuerySet[Evaluation]:
    status = Keyword.FetchStatus
    return evaluations.with_recompute_state().annotate(
        keyword_total=Count("keywords", distinct=True),
        keyword_fetched=Count("keywords", filter=Q(keywords__fetch_status=status.FETCHED),
                              distinct=True),
        keyword_failed=Count("keywords", filter=Q(keywords__fetch_status=status.FAILED),
                             distinct=True),
    ).order_by("-created_at", "-id")  # GROUP BY drops the default ordering


@dataclass(frozen=True)
class FetchProgress:
    status: str
    total: int
    fetched: int
    failed: int

    @property
    def done(self) -> int:
        return self.fetched + self.failed

    @property
    def pending(self) -> int:
        return self.total - self.done

    @property
    def all_failed(self) -> bool:
        """Every keyword done and none fetched: nothing to grade, not a healthy evaluation."""
        return self.total > 0 and self.failed == self.total

    @property
    def percent(self) -> int:
        # Floor, so 100 % means every keyword is done, never 99.6 rounded up.
        return 100 if self.total == 0 else self.done * 100 // self.total

    def as_dict(self) -> dict:
        return {"status": self.status, "total": self.total, "fetched": self.fetched,
                "failed": self.failed, "pending": self.pending, "percent": self.percent}


def fetch_progress_counted(evaluation: Evaluation) -> FetchProgress:
    """The progress of an evaluation read by evaluations_with_counts, without a query."""
    return FetchProgress(status=evaluation.status, total=evaluation.keyword_total,
                         fetched=evaluation.keyword_fetched, failed=evaluation.keyword_failed)


def fetch_progress(*, evaluation: Evaluation) -> FetchProgress:
    # Counts side by side (COUNT … FILTER), not GROUP BY fetch_status: under statistics
    # from before a large upload (the evaluation still looked small) PostgreSQL sorted the
    # 100,000 rows for the grouping on disk, on every poll of the progress page.
    status = Keyword.FetchStatus
    counts = evaluation.keywords.order_by().aggregate(
        total=Count("id"), fetched=Count("id", filter=Q(fetch_status=status.FETCHED)),
        failed=Count("id", filter=Q(fetch_status=status.FAILED)))
    current = Evaluation.objects.filter(pk=evaluation.pk).values_list("status", flat=True).first()
    return FetchProgress(status=current or evaluation.status, total=counts["total"],
                         fetched=counts["fetched"], failed=counts["failed"])


@dataclass(frozen=True)
class FetchError:
    error: str
    keyword: str  # the first keyword (by position) that failed with this error
    keyword_count: int


def fetch_errors(*, evaluation: Evaluation, limit: int = 5) -> list[FetchError]:
    """The first `limit` distinct errors of the failed keywords, in keyword order."""
    groups = list(evaluation.keywords.filter(fetch_status=Keyword.FetchStatus.FAILED)
                  .order_by().values("fetch_error")
                  .annotate(keyword_count=Count("id"), first_position=Min("position"))
                  .order_by("first_position")[:limit])
    texts = dict(evaluation.keywords.filter(
        position__in=[group["first_position"] for group in groups]).values_list("position", "text"))
    return [FetchError(error=group["fetch_error"], keyword=texts.get(group["first_position"], ""),
                       keyword_count=group["keyword_count"]) for group in groups]


def evaluation_keyword_entries(*, evaluation: Evaluation) -> list[KeywordEntry]:
    """The evaluation's keywords in their order, with their weights and tags."""
    return [KeywordEntry(text, weight, tuple(tags)) for text, weight, tags in
            evaluation.keywords.order_by("position").values_list("text", "weight", "tags")]


def keywords_of_evaluation(*, evaluation: Evaluation,
                           fetch_status: str = "") -> QuerySet[Keyword]:
    keywords = evaluation.keywords.annotate(snapshot_count=Count("snapshots")).order_by(
        "position")
    return keywords.filter(fetch_status=fetch_status) if fetch_status else keywords


def evaluation_progress(*, evaluation_id: int) -> float:
    """The share of the evaluation's slots graded, as the metrics app last stored it."""
    return Evaluation.objects.with_recompute_state().values_list(
        "progress", flat=True).get(pk=evaluation_id)


def metric_configs_of(*, evaluation: Evaluation) -> list[EvaluationMetric]:
    return list(evaluation.metric_configs.with_stored_mean().order_by("position", "id"))


# --- what depends on an object (the delete and archive confirm pages) --------------------


@dataclass(frozen=True)
class Dependents:
    """Counts by what they count ("search model": 2), in the order to name them."""

    counts: dict[str, int]

    def __bool__(self) -> bool:
        return any(self.counts.values())

    def uses(self) -> str:
        """The verb that agrees with summary(): '1 evaluation uses', '2 evaluations use'."""
        return "uses" if sum(self.counts.values()) == 1 else "use"

    def summary(self) -> str:
        """'2 search models and 1 evaluation'; empty when there are none."""
        parts = [f"{count} {noun}{'' if count == 1 else 's'}"
                 for noun, count in self.counts.items() if count]
        return " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else \
            "".join(parts)


def endpoint_dependents(*, endpoint: Endpoint) -> Dependents:
    return Dependents(counts={
        "search model": endpoint.models.count(),
        "evaluation": Evaluation.objects.filter(model__endpoint=endpoint).count(),
    })


def search_model_dependents(*, model: SearchModel) -> Dependents:
    return Dependents(counts={"evaluation": model.evaluations.count()})


def evaluation_dependents(*, evaluation: Evaluation) -> Dependents:
    return Dependents(counts={
        "keyword": evaluation.keywords.count(),
        "fetched result": Snapshot.objects.filter(keyword__evaluation=evaluation).count(),
    })


def raw_preview_visible(*, user: User, team_id: int) -> bool:
    """Whether a test's raw response is shown: whatever answered, a loopback service
    included, may say more than the mapped documents, so admins only see it."""
    return access.can(user=user, team_id=team_id, minimum_role=Role.ADMIN)
