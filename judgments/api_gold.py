"""The gold items API: GET /api/v1/evaluations/{id}/gold/ (the
evaluation's results that are gold items), POST the same (make a result gold) and POST
.../gold/import/ (a file of `keyword,doc_id,grade` lines or JSON lines). Leads and above
(access.GRADES_ROLE: gold answers are grades everyone is measured against)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.selectors import evaluation_get_for_user
from judgments import gold_items
from judgments.api import GradeField
from searchtweak import access
from searchtweak.integers import api_id


class GoldItemOutputSerializer(serializers.Serializer):
    snapshot = serializers.IntegerField(source="snapshot_id")
    keyword = serializers.CharField(source="snapshot.keyword.text")
    doc_id = serializers.CharField(source="snapshot.doc_id")
    grade = serializers.IntegerField(help_text="The known answer.")
    source = serializers.CharField(help_text="adjudicated, import or page.")
    created_by = serializers.CharField(source="created_by.username", allow_null=True,
                                       default=None)
    created_at = serializers.DateTimeField()


class EvaluationGoldApi(APIView):
    class InputSerializer(serializers.Serializer):
        snapshot = api_id(help_text="A result of the evaluation.")
        grade = GradeField(required=False, allow_null=True, default=None,
                           help_text="The answer; without it the result's adjudicated grade, "
                                     "else the one grade all its graders gave.")

    @extend_schema(responses=GoldItemOutputSerializer(many=True),
                   operation_id="evaluations_gold_list",
                   description="The evaluation's results that are gold items. Leads and above.")
    def get(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.GRADES_ROLE)
        return Response(GoldItemOutputSerializer(
            gold_items.evaluation_gold_items(evaluation=evaluation), many=True).data)

    @extend_schema(request=InputSerializer, responses={201: GoldItemOutputSerializer},
                   operation_id="evaluations_gold_make",
                   description="Make a result gold: graders' queues on the same scale slip it "
                               "in (at their evaluation's `gold_rate`) once this evaluation "
                               "is finished. Again on the same result replaces its answer. "
                               "Leads and above.")
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.GRADES_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        item = gold_items.gold_item_make(
            user=request.user, evaluation=evaluation,
            snapshot_id=serializer.validated_data["snapshot"],
            grade=serializer.validated_data["grade"])
        return Response(GoldItemOutputSerializer(item).data, status=status.HTTP_201_CREATED)


class EvaluationGoldImportApi(APIView):
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(
            help_text="CSV `keyword,doc_id,grade` (a header line of those names is "
                      "skipped) or JSON lines `{\"keyword\", \"doc_id\", \"grade\"}`, each "
                      "a result of this evaluation.")

    class OutputSerializer(serializers.Serializer):
        imported = serializers.IntegerField(help_text="Results made (or kept) gold.")

    @extend_schema(request={"multipart/form-data": InputSerializer},
                   responses={201: OutputSerializer}, operation_id="evaluations_gold_import",
                   description="Make the file's results gold with their grades. All or "
                               "nothing: any bad line answers 400 on `file` with every error "
                               "and its line number. Leads and above.")
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = evaluation_get_for_user(user=request.user, evaluation_id=evaluation_id,
                                             minimum_role=access.GRADES_ROLE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        if upload.size > gold_items.GOLD_IMPORT_MAX_BYTES:
            return Response({"file": [f"At most {gold_items.GOLD_IMPORT_MAX_BYTES} bytes."]},
                            status=status.HTTP_400_BAD_REQUEST)
        imported = gold_items.gold_items_import(user=request.user, evaluation=evaluation,
                                                content=upload.read())
        return Response(self.OutputSerializer({"imported": imported}).data,
                        status=status.HTTP_201_CREATED)
