"""The grading API (docs/ARCHITECTURE.md): the next slot, grading a snapshot, its slots.

Each view checks access, validates shape, calls one service and serializes; the rules are
the services', shared with the grading page.
"""

from django.core.exceptions import ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.models import Action
from audit.services import audit_record
from evaluations.selectors import evaluation_get_for_user
from judgments import exports, gold, imports, pool, queue, queue_selectors, selectors
from judgments import scales as scale_lookup
from judgments.formats import recognise
from judgments.grading import gold_probe_grade, snapshot_grade, snapshot_grade_and_claim_next
from judgments.slot_json import ASSIGNED_SLOT_FIELDS, SLOT_FIELDS, SlotField
from metrics_engine.scales import is_integer
from searchtweak import access
from searchtweak.api_files import FileContentNegotiation, FileStreamResponse
from searchtweak.api_pagination import PageNumberPagination, paginated_response
from searchtweak.integers import INT_MAX, api_id
from searchtweak.models import Role, User


@extend_schema_field({"type": "integer", "minimum": 0, "maximum": INT_MAX})
class GradeField(serializers.Field):
    """A JSON integer: "3", 1.5 and true are not grades (docs/METRICS.md, Invalid input).
    Within 0..INT_MAX here; whether it is on the evaluation's scale is the service's."""

    default_error_messages = {"invalid": "A grade must be a JSON integer, not {value!r}.",
                              "range": "A grade is between 0 and {maximum}."}

    def to_internal_value(self, data):
        if not is_integer(data):
            self.fail("invalid", value=data)
        if not 0 <= data <= INT_MAX:
            self.fail("range", maximum=INT_MAX)
        return int(data)

    def to_representation(self, value):
        return value


_FIELD_CLASSES = {"int": serializers.IntegerField, "str": serializers.CharField,
                  "bool": serializers.BooleanField, "datetime": serializers.DateTimeField,
                  "json": serializers.JSONField}


def _serializer_fields(fields: tuple[SlotField, ...]) -> dict[str, serializers.Field]:
    """Serializer fields for slot_json's fields, reading a FeedbackSlot."""
    built = {}
    for field in fields:
        options: dict = {}
        if field.source != field.name:
            options["source"] = field.source
        if field.nullable:
            # A dotted source through a null relation (no grader) reads as the default.
            options.update(allow_null=True, **({"default": None} if "." in field.source
                                               else {}))
        if field.help_text:
            options["help_text"] = field.help_text
        built[field.name] = _FIELD_CLASSES[field.kind](**options)
    return built


# Built from judgments.slot_json, which the fast path below reads too: one definition.
SlotOutputSerializer = type("SlotOutputSerializer", (serializers.Serializer,), {
    "__module__": __name__, **_serializer_fields(SLOT_FIELDS)})
AssignedSlotOutputSerializer = type("AssignedSlotOutputSerializer", (SlotOutputSerializer,), {
    "__module__": __name__, **_serializer_fields(ASSIGNED_SLOT_FIELDS[len(SLOT_FIELDS):])})

_DATETIME = serializers.DateTimeField()


def assigned_slot_data(row: dict) -> dict:
    """AssignedSlotOutputSerializer's output from selectors.assigned_slot's row (the same
    fields, judgments.slot_json), without building a model: both grading calls answer
    with it on every grade."""
    return {field.name: (_DATETIME.to_representation(row[field.name])
                         if field.kind == "datetime" and row[field.name] else row[field.name])
            for field in ASSIGNED_SLOT_FIELDS}


class GradeInputSerializer(serializers.Serializer):
    grade = GradeField()
    unsure = serializers.BooleanField(default=False)
    note = serializers.CharField(default="", allow_blank=True, max_length=2000)


def _claim_next(user: User, target: selectors.GradingTarget) -> dict | None:
    """The caller's next slot (or gold probe, read as one) in the target's queue."""
    return queue.slot_claim_next_assigned(
        user=user, evaluation_ids=queue_selectors.target_queue(user=user, target=target),
        shuffled_ids=queue_selectors.target_shuffled_ids(target),
        decisive_ids=queue_selectors.target_decisive_ids(target),
        gold_ids=queue_selectors.target_gold_ids(target))


class EvaluationNextApi(APIView):
    class InputSerializer(GradeInputSerializer):
        snapshot = api_id(
            help_text="Grade this snapshot of the evaluation first (with `grade`).")

    @extend_schema(
        request=InputSerializer, responses={
            200: AssignedSlotOutputSerializer, 204: OpenApiResponse(description="Nothing left"),
            409: OpenApiResponse(description="The snapshot's slots all belong to others")},
        operation_id="evaluations_next",
        description="Lease the caller the next result to grade. With a body, first grade a "
        "result of this evaluation (as `POST /snapshots/{id}/grade/` does), so a grading "
        "client needs one request per grade; a bad grade is a 400 and claims nothing.")
    def post(self, request: Request, evaluation_id: int) -> Response:
        # Only a missing or empty object means "no grade": `[]`, `0` or `false` is a bad body.
        if isinstance(request.data, dict) and not request.data:
            target = selectors.evaluation_target_for_user(
                user=request.user, evaluation_id=evaluation_id)
            slot = _claim_next(request.user, target)
        else:
            serializer = self.InputSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            grading = dict(serializer.validated_data)
            # The snapshot's read checks membership for the evaluation as well.
            target = selectors.snapshot_target_for_user(
                user=request.user, snapshot_id=grading.pop("snapshot"))
            if target.evaluation_id != evaluation_id:
                # A gold probe shows a result of another evaluation (judgments.gold): the
                # grade is the probe's. Only then is it looked for: no cost to a slot's grade.
                if gold_probe_grade(user=request.user, snapshot_id=target.snapshot_id,
                                    evaluation_id=evaluation_id, **grading) is None:
                    raise ValidationError(
                        {"snapshot": "That result is not in this evaluation."})
                slot = _claim_next(request.user, selectors.evaluation_target_for_user(
                    user=request.user, evaluation_id=evaluation_id))
                return (Response(status=status.HTTP_204_NO_CONTENT) if slot is None
                        else Response(assigned_slot_data(slot)))
            try:
                slot = snapshot_grade_and_claim_next(
                    user=request.user, target=target, **grading,
                    evaluation_ids=queue_selectors.target_queue(user=request.user, target=target),
                    shuffled_ids=queue_selectors.target_shuffled_ids(target),
                    decisive_ids=queue_selectors.target_decisive_ids(target),
                    gold_ids=queue_selectors.target_gold_ids(target))
            except queue.SlotConflict as conflict:
                return Response({"detail": str(conflict)}, status=status.HTTP_409_CONFLICT)
        if slot is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(assigned_slot_data(slot))


class SnapshotGradeApi(APIView):
    InputSerializer = GradeInputSerializer

    @extend_schema(request=InputSerializer, responses={
        200: AssignedSlotOutputSerializer,
        409: OpenApiResponse(description="Every slot belongs to someone else")},
        operation_id="snapshots_grade")
    def post(self, request: Request, snapshot_id: int) -> Response:
        target = selectors.snapshot_target_for_user(user=request.user, snapshot_id=snapshot_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            slot_id = snapshot_grade(
                user=request.user, target=target, **serializer.validated_data)
        except (ValidationError, queue.SlotConflict) as refusal:
            # A gold item's result belongs to a finished evaluation, whose slots refuse
            # every grade: a grade sent for it is the caller's probe's, if they hold one.
            probe = None if target.is_active else gold_probe_grade(
                user=request.user, snapshot_id=snapshot_id, **serializer.validated_data)
            if probe is not None:
                return Response(assigned_slot_data(gold.probe_row(probe)))
            if isinstance(refusal, ValidationError):
                raise
            return Response({"detail": str(refusal)}, status=status.HTTP_409_CONFLICT)
        return Response(assigned_slot_data(selectors.assigned_slot(slot_id=slot_id)))


class EvaluationSnapshotListApi(APIView):
    # paginated_response answers {count, next, previous, results}; the schema says so.
    pagination_class = PageNumberPagination

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        keyword = serializers.CharField(source="keyword.text")
        keyword_id = serializers.IntegerField()
        position = serializers.IntegerField()
        doc_id = serializers.CharField()
        name = serializers.CharField()
        image = serializers.CharField()
        fields = serializers.JSONField()
        slots = SlotOutputSerializer(many=True, source="slots.all")

    @extend_schema(
        responses=OutputSerializer(many=True), operation_id="evaluations_snapshots",
        description="The evaluation's results with their slots: every slot for a lead and "
        "above, a grader's own slots only (graders grade independently).")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id)
        keyword_id = request.query_params.get("keyword")
        snapshots = selectors.evaluation_snapshots(
            evaluation=evaluation, visibility=access.grade_visibility(user=request.user),
            keyword_id=int(keyword_id) if keyword_id and keyword_id.isdigit() else None,
        )
        return paginated_response(self, request, snapshots,
                                  lambda page: self.OutputSerializer(page, many=True).data)


# --- export and import of judgments ---


class ExportJudgmentSerializer(serializers.Serializer):
    keyword = serializers.CharField()
    keyword_position = serializers.IntegerField()
    doc_id = serializers.CharField()
    position = serializers.IntegerField()
    slot = serializers.IntegerField()
    grader = serializers.CharField(
        allow_null=True, help_text="The grader's username; `(import)` for a grade copied from "
        "the team's imported judgments; null for an ungraded slot nobody holds.")
    grade = serializers.IntegerField(allow_null=True)
    graded_at = serializers.DateTimeField(allow_null=True)
    unsure = serializers.BooleanField()
    note = serializers.CharField(allow_blank=True,
                                 help_text="The grader's note on an unsure grade; empty else.")
    reused = serializers.BooleanField(
        help_text="Copied from an earlier evaluation's grade or the team's imported judgments.")
    grader_kind = serializers.ChoiceField(
        choices=list(User.KINDS), allow_null=True,
        help_text="`judge` for an LLM judge's account, `person` for a person's; null when no "
        "account holds the slot.")
    reason = serializers.CharField(allow_blank=True,
                                   help_text="An LLM judge's reason for its grade; empty else.")


class JudgmentExportOutputSerializer(serializers.Serializer):
    evaluation = serializers.IntegerField()
    name = serializers.CharField()
    scale = serializers.CharField()
    status = serializers.CharField()
    partial = serializers.BooleanField(
        help_text="The evaluation is not finished: these judgments may still change.")
    judgments = ExportJudgmentSerializer(many=True)


class JudgmentImportOutputSerializer(serializers.Serializer):
    imported = serializers.IntegerField(help_text="Judgments stored in the team's pool.")
    replaced = serializers.IntegerField(
        help_text="Judgments imported earlier for the same keyword and document, replaced.")
    keywords = serializers.IntegerField(help_text="Distinct keyword texts in the file.")
    dirty_keywords = serializers.IntegerField(
        help_text="Keywords of the team whose pool metrics recompute.")
    duplicates = serializers.IntegerField(
        help_text="Lines skipped because they repeat an earlier judgment of the file.")
    dropped = serializers.IntegerField(
        help_text="With `duplicates=newest`: older lines of repeated pairs, not imported.")


class GradeTableRowSerializer(serializers.Serializer):
    rating, grade = serializers.CharField(), serializers.IntegerField()


class JudgmentImportPreviewSerializer(serializers.Serializer):
    class RowSerializer(serializers.Serializer):
        line = serializers.IntegerField()
        keyword = serializers.CharField()
        doc_id = serializers.CharField()
        grade = serializers.IntegerField()
        grader = serializers.CharField(allow_blank=True)
        grader_kind = serializers.CharField(allow_blank=True)
        unsure = serializers.BooleanField()
        note = serializers.CharField(allow_blank=True)

    dry_run = serializers.BooleanField()
    valid = serializers.BooleanField(help_text="False when any line has an error.")
    would_import = serializers.IntegerField()
    keywords = serializers.IntegerField()
    duplicates = serializers.IntegerField(
        help_text="Lines that repeat an earlier judgment of the file, which are skipped.")
    duplicate_policy = serializers.ChoiceField(choices=list(imports.DUPLICATE_POLICIES))
    repeated_pairs = serializers.IntegerField(
        help_text="Keyword/document pairs on more than one line of the file.")
    repeated_lines = serializers.IntegerField(
        help_text="Lines of those pairs after each pair's first.")
    dropped = serializers.IntegerField(
        help_text="Lines `duplicates=newest` leaves out (0 with `all`).")
    repeats = serializers.CharField(
        help_text="What the import does with the repeated pairs, in words.")
    errors = serializers.ListField(child=serializers.CharField(),
                                   help_text="Every error, with its line number.")
    format = serializers.CharField(allow_blank=True, help_text="What the file was read as.")
    format_reason = serializers.CharField(allow_blank=True, help_text="Why it was.")
    grade_rule = serializers.CharField(allow_blank=True, help_text="How the file's "
                                       "ratings became grades of the scale.")
    grade_table = GradeTableRowSerializer(many=True, help_text="Rating → grade.")
    skipped = serializers.IntegerField(help_text="Queries with no rating, skipped.")
    skipped_note = serializers.CharField(allow_blank=True)
    preview = RowSerializer(many=True, help_text="The first 20 judgments read.")


_EXPORT_FORMATS = list(exports.FORMATS)


class EvaluationJudgmentsApi(APIView):
    """Export an evaluation's judgments (GET) or import judgments into its team's pool
    on the evaluation's scale (POST). Both need the lead role."""

    content_negotiation_class = FileContentNegotiation
    parser_classes = [MultiPartParser, FormParser]

    class ExportFilterSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=_EXPORT_FORMATS, default="json")
        per_grader = serializers.BooleanField(default=False)
        download = serializers.BooleanField(
            default=False, help_text="`json` only: answer the JSON as a file to save "
            "(Content-Disposition: attachment); the other formats always are.")

    class InputSerializer(serializers.Serializer):
        format = serializers.ChoiceField(
            choices=recognise.KIND_CHOICES, default="auto", help_text="`auto` recognises "
            "the file (`dry_run` says as what and why); docs/guide/metrics.md lists them.")
        file = serializers.FileField(help_text="The judgments file.")
        duplicates = serializers.ChoiceField(
            choices=list(imports.DUPLICATE_POLICIES), default="all",
            help_text="A keyword and document on several lines: `all` imports every line "
            "as a separate grade, `newest` only the newest (latest graded_at, else the "
            "later line).")
        mapping = serializers.FileField(
            required=False, help_text="TREC with numeric topic ids: `qid<TAB>keyword` lines.")

    class ImportFilterSerializer(serializers.Serializer):
        dry_run = serializers.BooleanField(default=False)

    @extend_schema(
        parameters=[ExportFilterSerializer],
        responses={
            (200, "application/json"): JudgmentExportOutputSerializer,
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "text/plain"): OpenApiTypes.STR,
            (200, "application/jsonl"): OpenApiTypes.STR,
        },
        operation_id="evaluations_judgments_export",
        description=(
            "`json`: every slot. `jsonl`: JSON Lines, the objects of `json`'s `judgments`, one "
            "compact object a line, without the envelope (`partial` is in the header). "
            "`csv`: `keyword,doc_id,grade` aggregated on the evaluation's "
            "scale (binary: majority, ties left out; other scales: the mean), for reading: "
            "means are not grades, so the import refuses it. With `per_grader=true`: the "
            "per-slot format that imports back losslessly, `keyword,doc_id,grade,grader,"
            "grader_kind,reason,unsure,note,position,graded_at`, one line per graded slot "
            "(`grader_kind`: `person` or `judge`; `reason`: a judge's; `unsure`: `true` or "
            "`false`; `note`: the grader's unsure note; `graded_at`: ISO 8601, UTC). "
            "`trec`: qrels `qid 0 docid grade` (aggregate rounded half up, qid = keyword "
            "position); `trec_mapping`: `qid<TAB>keyword`; `trec_run`: `qid Q0 docid rank "
            "score tag`; `run_jsonl`: the snapshots as JSON Lines, one `{keyword, results: "
            "[{doc_id, name, …fields}]}` a fetched keyword, which an offline model's run "
            "upload reads back (`models/{id}/run/`, format `jsonl`). "
            "`quepid_csv` (Quepid basic CSV), `rre` (RRE ratings.json), `ltr` "
            "(`grade qid:N # docid query`), `workbench` (OpenSearch Search Relevance "
            "Workbench judgments): one grade a keyword and document, the aggregate rounded "
            "half up as in `trec`; the import reads each back. "
            "An evaluation that is not finished is exported too, marked partial: "
            "header `X-SearchTweak-Partial: true` and `partial` in JSON. Files are named "
            "`searchtweak-<evaluation name slug, else id>-<judgments|judgments-per-grader|"
            "qid-mapping|run|quepid-ratings|rre-ratings|ltr-judgments|workbench-judgments>-"
            "<YYYYMMDD>.<json|jsonl|csv|trec|tsv|run|txt>`. Every "
            "format is streamed as it is read, whatever the evaluation's size."
        ),
    )
    def get(self, request: Request, evaluation_id: int) -> Response:
        # Every grade of the evaluation, by grader: for those who see everyone's grades.
        evaluation = evaluation_get_for_user(
            user=request.user, evaluation_id=evaluation_id, minimum_role=access.GRADES_ROLE)
        filters = self.ExportFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        kind = filters.validated_data["format"]
        per_grader = filters.validated_data["per_grader"]
        partial = "true" if exports.is_partial(evaluation) else "false"
        name = exports.filename(evaluation, kind, per_grader=per_grader)
        download = filters.validated_data["download"]
        if kind == "json" and not download and request.accepted_renderer.format != "json":
            # The browsable API, for a person reading a small evaluation in a browser.
            response = Response(exports.judgments_json(evaluation))
            response["Content-Disposition"] = f'inline; filename="{name}"'
            response["X-SearchTweak-Partial"] = partial
            return response
        # Streamed: a million judgments are written as they are read. JSON is rendered here
        # as the JSON renderer would (a browser's Accept would otherwise pick the browsable
        # API for a download); API clients read it inline, the name there for "save as".
        audit_record(action=Action.EXPORT_DOWNLOADED, actor=request.user,
                     team_id=evaluation.team_id, object_type="evaluation",
                     object_id=evaluation.pk, after={"format": kind, "per_grader": per_grader})
        http = FileStreamResponse(
            exports.evaluation_stream(evaluation, kind, per_grader=per_grader),
            content_type=exports.CONTENT_TYPES[kind], filename=name,
            disposition="attachment" if kind != "json" or download else "inline")
        http["X-SearchTweak-Partial"] = partial
        return http

    @extend_schema(
        parameters=[ImportFilterSerializer],
        request={"multipart/form-data": InputSerializer},
        responses={201: JudgmentImportOutputSerializer, 200: JudgmentImportPreviewSerializer},
        operation_id="evaluations_judgments_import",
        description=(
            "Import judgments into the team's pool on this evaluation's scale: they count in "
            "`recall`, `best` and `ideal: pool` of every keyword of the team with the same "
            "text. All or nothing: any invalid line answers 400 with every error and its "
            "line number, and nothing is stored. `dry_run=true` answers 200 with what would "
            "be imported and the errors, and stores nothing. A (keyword, document) pair "
            "imported again replaces the grades imported before for it. At most 100,000 "
            "judgments a file; a line repeating an earlier judgment of the file (same "
            "grader) is skipped and counted in `duplicates`; other lines of one keyword and "
            "document follow the `duplicates` policy."
        ),
    )
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(
            user=request.user, evaluation_id=evaluation_id, minimum_role=Role.LEAD)
        flags = self.ImportFilterSerializer(data=request.query_params)
        flags.is_valid(raise_exception=True)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        scale = scale_lookup.scale_for_team(team_id=evaluation.team_id, code=evaluation.scale)
        if scale is None:
            raise ValidationError({"scale": f"Unknown scale {evaluation.scale!r}."})
        parsed = recognise.parse_upload(
            kind=data["format"], file=data["file"], mapping=data.get("mapping"), scale=scale,
            duplicates=data["duplicates"])
        if flags.validated_data["dry_run"]:
            return Response(JudgmentImportPreviewSerializer(imports.preview(parsed)).data)
        if not parsed.ok:
            raise ValidationError({"file": parsed.messages()})
        counts = pool.pool_judgments_import(
            team=evaluation.team, scale=evaluation.scale, judgments=parsed.judgments,
            source=f"{parsed.format_kind}: {data['file'].name}", user=request.user)
        counts = {**counts, "duplicates": parsed.duplicate_count,
                  "dropped": parsed.dropped_count}
        return Response(JudgmentImportOutputSerializer(counts).data,
                        status=status.HTTP_201_CREATED)
