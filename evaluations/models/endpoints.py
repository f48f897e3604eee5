"""Endpoints (a search engine's HTTP API) and the search models that query them."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from evaluations.models.team_owned import TeamOwnedQuerySet
from searchtweak.models import Team


class Endpoint(models.Model):
    """A search engine's HTTP API and how to read documents out of its JSON answer."""

    class Method(models.TextChoices):
        GET = "GET"
        POST = "POST"
        PUT = "PUT"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=100)
    url = models.URLField(max_length=2000)
    method = models.CharField(max_length=4, choices=Method.choices, default=Method.GET)
    headers = models.JSONField(default=dict, blank=True)
    # JSON {header: value} encrypted with a key derived from SECRET_KEY; never shown back.
    secret_headers_encrypted = models.TextField(blank=True, default="")
    timeout_seconds = models.FloatField(default=10.0)
    # {"documents": <JMESPath>, "id": …, "name": …, "image": … or null, "fields": {label: …}}
    mapper = models.JSONField(default=dict)
    # Limits shared by every worker (searchtweak.outbound_limits); null: no limit.
    max_concurrent_requests = models.PositiveIntegerField(null=True, blank=True, default=16)
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    # Off: a redirect to another origin is an error. On: followed, without any header set
    # here (plain or secret), so credentials never leave the endpoint's own origin.
    allow_cross_origin_redirects = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)

    objects = TeamOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(timeout_seconds__gt=0), name="endpoint_timeout_positive"
            ),
            models.CheckConstraint(
                condition=Q(max_concurrent_requests__isnull=True)
                | Q(max_concurrent_requests__gte=1),
                name="endpoint_max_concurrent_requests_positive",
            ),
            models.CheckConstraint(
                condition=Q(requests_per_minute__isnull=True) | Q(requests_per_minute__gte=1),
                name="endpoint_requests_per_minute_positive",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_offline(self) -> bool:
        return self.endpoint_id is None


class SearchModel(models.Model):
    """One way of querying an endpoint: params, body and headers with #query# in them.

    An offline model has no endpoint: its rankings come from an uploaded run file
    (OfflineRun), read by the fetch instead of a request (docs/decisions/0017)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="search_models")
    # Null: an offline model (is_offline).
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="models",
                                 null=True, blank=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    class BodyFormat(models.TextChoices):
        JSON = "json", "JSON"
        FORM = "form", "Form (application/x-www-form-urlencoded)"

    params = models.JSONField(default=dict, blank=True)
    body = models.TextField(null=True, blank=True)  # noqa: DJ001 (null = no body, "" = empty body)
    # How #query# is escaped in the body, and the Content-Type sent with it.
    body_format = models.CharField(
        max_length=4, choices=BodyFormat.choices, default=BodyFormat.JSON
    )
    headers = models.JSONField(default=dict, blank=True)
    # Headers with sensitive names (Authorization, X-Api-Key, …), encrypted as an
    # endpoint's secret headers are (evaluations.crypto), shown back masked.
    secret_headers_encrypted = models.TextField(blank=True, default="")
    default_keywords = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)

    objects = TeamOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_offline(self) -> bool:
        return self.endpoint_id is None


class OfflineRun(models.Model):
    """The rankings of an offline search model, read from the run file last uploaded for
    it; a new upload replaces them. Evaluations already fetched keep their snapshots."""

    class Format(models.TextChoices):
        TREC = "trec", "TREC run"
        JSONL = "jsonl", "JSON Lines"

    model = models.OneToOneField(SearchModel, on_delete=models.CASCADE,
                                 related_name="offline_run")
    format = models.CharField(max_length=5, choices=Format.choices)
    filename = models.CharField(max_length=255, blank=True, default="")
    keyword_count = models.PositiveIntegerField(default=0)
    result_count = models.PositiveIntegerField(default=0)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    uploaded_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.model} ({self.filename or self.format})"


class OfflineRanking(models.Model):
    """One keyword's ranking in a run: [{"doc_id", "name", "image", "fields"}, …] in rank
    order (the snapshot's columns, ready to copy); "name", "image" and "fields" only when
    not empty."""

    run = models.ForeignKey(OfflineRun, on_delete=models.CASCADE, related_name="rankings")
    keyword = models.CharField(max_length=1000)
    documents = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "keyword"],
                                    name="offline_ranking_keyword_unique"),
        ]

    def __str__(self) -> str:
        return self.keyword


class OfflineRunBlock(models.Model):
    """Consecutive lines of one topic in a TREC run file, while its upload is read (a
    staging row): the blocks are streamed in, then read back topic by topic into
    OfflineRankings and deleted, all in the upload's transaction, so none outlives it. A
    TREC file need not group its topics, and this lets the database bring a topic's
    blocks together instead of the upload holding every line."""

    # No index: the blocks of one upload are read once, in one sorted scan.
    run = models.ForeignKey(OfflineRun, on_delete=models.CASCADE, related_name="+",
                            db_index=False)
    keyword = models.CharField(max_length=1000)
    line = models.PositiveIntegerField(help_text="The block's first line.")
    # JSON text, [[line, doc id, rank], …]: written and read by the upload alone, as one
    # value (a JSON column would parse and re-encode what nothing queries).
    lines = models.TextField()

    def __str__(self) -> str:
        return f"{self.keyword} from line {self.line}"
