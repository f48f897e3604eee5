"""Offline models: create one, store a run file's rankings for it, and hand a fetch the
rankings of its keywords (the fetch stores them as it stores an endpoint's answers)."""

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connections, router, transaction
from django.db.models import F, Func, JSONField
from django.utils import timezone

from audit.models import Action
from audit.services import audit_object, fields_of
from evaluations.endpoints.mapper import Document
from evaluations.fetching.search_requests import FetchResult
from evaluations.models import Keyword, KeywordSet, OfflineRanking, OfflineRun, SearchModel
from evaluations.offline_runs import storing
from evaluations.offline_runs.parsing import RunFileError, parse_topic_map
from searchtweak.models import Team, User
from searchtweak.uploads import upload_too_large


def run_upload_size_problem(*, filename: str, size: int) -> str | None:
    """Why an uploaded run file (or topic mapping) of `size` bytes is refused before it is
    read, or None: over settings.OFFLINE_RUN_MAX_BYTES. The page and the API ask it with
    the size the request gives, so nothing is read or stored from such a file."""
    return upload_too_large(filename=filename, size=size, setting="OFFLINE_RUN_MAX_BYTES",
                            what="a run file")


@transaction.atomic
def search_model_create_offline(*, team: Team, created_by: User | None, name: str,
                                description: str = "") -> SearchModel:
    """A search model without an endpoint: its rankings come from offline_run_upload."""
    if not name.strip():
        raise ValidationError({"name": "A search model needs a name."})
    model = SearchModel.objects.create(team=team, created_by=created_by, endpoint=None,
                                       name=name.strip(), description=description)
    audit_object(action=Action.SEARCH_MODEL_CREATED, instance=model,
                 object_type="search_model", actor=created_by,
                 after=fields_of(model, only=("name", "description", "endpoint")))
    return model


def query_set_topics(*, query_set: KeywordSet) -> dict[str, str]:
    """Topic ids as the TREC exports number keywords: "1" for the query set's first keyword
    (its current version's position order), "2" for the second, …"""
    version = query_set.current_version()
    if version is None:
        raise ValidationError({"query_set": f"{query_set.name} has no keywords."})
    return {str(number): normalized for number, normalized in enumerate(
        version.keywords.order_by("position").values_list("normalized_text", flat=True),
        start=1)}


def _topics(*, topic_lines: Iterable[bytes | str] | None,
            query_set: KeywordSet | None) -> dict[str, str] | None:
    """TREC topic ids: from a mapping file, else a query set's keyword numbers, else none
    (the ids are the keywords)."""
    if topic_lines is not None:
        if query_set is not None:
            raise ValidationError({"query_set": "Give a topic mapping or a query set, "
                                   "not both."})
        try:
            return parse_topic_map(topic_lines, normalize=Keyword.normalize)
        except RunFileError as error:
            raise ValidationError({"topics": str(error)}) from None
    return query_set_topics(query_set=query_set) if query_set is not None else None


@transaction.atomic
def offline_run_upload(*, model: SearchModel, uploaded_by: User | None, run_format: str,
                       lines: Iterable[bytes | str], filename: str = "",
                       topic_lines: Iterable[bytes | str] | None = None,
                       query_set: KeywordSet | None = None) -> OfflineRun:
    """Read a run file and make it the model's run, replacing the one before. The file is
    streamed into the database (storing), its memory bounded whatever its size; a bad
    file raises ValidationError({"file": "line N, field: …"}) (or "topics") for its first
    bad line, and the transaction's rollback leaves the previous run as it was.
    `query_set`: TREC topic ids are its keywords' numbers (query_set_topics)."""
    if not model.is_offline:
        raise ValidationError({"model": "Runs are uploaded for offline models only; this one "
                               "queries an endpoint."})
    if model.archived_at is not None:
        raise ValidationError({"model": f"{model.name} is archived."})
    if query_set is not None and query_set.team_id != model.team_id:
        raise ValidationError({"query_set": "No such query set in this team."})
    if run_format not in OfflineRun.Format.values:
        raise ValidationError({"format": "Use trec or jsonl."})
    if run_format == OfflineRun.Format.JSONL and (topic_lines is not None
                                                  or query_set is not None):
        raise ValidationError({"topics": "A JSON Lines run names its keywords itself."})
    topics = _topics(topic_lines=topic_lines, query_set=query_set)
    OfflineRun.objects.filter(model=model).delete()
    run = OfflineRun.objects.create(model=model, format=run_format, filename=filename[:255],
                                    uploaded_by=uploaded_by)
    try:
        if run_format == OfflineRun.Format.TREC:
            counts = storing.trec_run_store(run=run, lines=lines, topics=topics)
        else:
            counts = storing.jsonl_run_store(run=run, lines=lines)
    except RunFileError as error:
        raise ValidationError({"file": str(error)}) from None
    if not counts[0]:
        raise ValidationError({"file": "The file holds no ranking."})
    run.keyword_count, run.result_count = counts
    run.save(update_fields=["keyword_count", "result_count"])
    audit_object(action=Action.OFFLINE_RUN_IMPORTED, instance=model,
                 object_type="search_model", actor=uploaded_by, team_id=model.team_id,
                 after={"run": run.pk, "format": run_format, "filename": run.filename,
                        "keyword_count": run.keyword_count, "result_count": run.result_count})
    return run


@transaction.atomic
def offline_model_create_with_run(*, team: Team, created_by: User | None, name: str,
                                  description: str, run_format: str,
                                  lines: Iterable[bytes | str], filename: str = "",
                                  topic_lines: Iterable[bytes | str] | None = None
                                  ) -> SearchModel:
    """The page's one step: the model and its run, or (a bad file) neither."""
    model = search_model_create_offline(team=team, created_by=created_by, name=name,
                                        description=description)
    offline_run_upload(model=model, uploaded_by=created_by, run_format=run_format,
                       lines=lines, filename=filename, topic_lines=topic_lines)
    return model


class _JsonArrayHead(Func):
    """The first `limit` items of a JSON array, cut by PostgreSQL (a jsonpath slice; lax
    mode, so a shorter array comes back whole)."""

    function = "jsonb_path_query_array"
    template = "%(function)s(%(expressions)s, '$[0 to %(last)s]')"
    output_field = JSONField()

    def __init__(self, expression: Any, *, limit: int) -> None:
        super().__init__(expression, last=int(limit) - 1)


def offline_results(*, model: SearchModel, keywords: dict[int, str],
                    limit: int) -> list[tuple[int, FetchResult]]:
    """Each keyword's ranking in the model's run, its first `limit` documents, as a fetch
    result; a keyword the run does not rank returned nothing (an empty result, as an
    endpoint answering no documents)."""
    wanted = {keyword_id: Keyword.normalize(text) for keyword_id, text in keywords.items()}
    rankings = OfflineRanking.objects.filter(run__model=model,
                                             keyword__in=set(wanted.values()))
    documents: Any = F("documents")
    if limit >= 1 and connections[router.db_for_read(OfflineRanking)].vendor == "postgresql":
        # A ranking holds up to 100 documents and a fetch keeps the first `limit` (10 for
        # most evaluations): cut in the database, Python decodes a tenth of the JSON.
        documents = _JsonArrayHead(documents, limit=limit)
    ranked = dict(rankings.annotate(head=documents).values_list("keyword", "head"))
    return [(keyword_id, FetchResult(documents=[
        Document(doc_id=d["doc_id"], name=d.get("name", ""), image=d.get("image", ""),
                 fields=d.get("fields", {}))
        for d in ranked.get(normalized, [])[:limit]]))
        for keyword_id, normalized in wanted.items()]


def offline_model_update(*, model: SearchModel, **changes: Any) -> SearchModel:
    """An offline model's own fields (no endpoint, params or headers to change)."""
    if "name" in changes and not changes["name"].strip():
        raise ValidationError({"name": "A search model needs a name."})
    update_fields = []
    for key in ("name", "description", "default_keywords"):
        if key in changes:
            setattr(model, key, changes[key].strip() if key == "name" else changes[key])
            update_fields.append(key)
    if "archived" in changes:
        model.archived_at = (model.archived_at or timezone.now()) if changes["archived"] else None
        update_fields.append("archived_at")
    model.save(update_fields=update_fields)
    return model
