"""The team's judgment pool: the import of judgments (leads and up) and their export."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from audit.models import Action
from audit.services import audit_record
from evaluations.selectors import evaluation_get_for_user
from judgments import exports, imports, pool, selectors
from judgments import scales as scale_lookup
from judgments.formats import recognise
from judgments.forms import PoolImportForm
from searchtweak import access
from searchtweak.models import Role, Team


@require_http_methods(["GET", "POST"])
@login_required
def pool_import(request: HttpRequest) -> HttpResponse:
    """Import judgments into the current team's pool. "Preview" parses and shows what would
    be imported, every error and what happens to repeated pairs, and keeps the file
    (a hidden token names it) so "Import" needs no second upload; "Import" stores all of
    it, or nothing if any line fails."""
    team = access.current_team_access(user=request.user, minimum_role=Role.LEAD).team
    token = request.POST.get("upload", "")
    kept = selectors.pool_upload_get(team=team, user=request.user, token=token)
    form = PoolImportForm(request.POST or None, request.FILES or None, kept=kept is not None,
                          scale_choices=scale_lookup.provider_choices(team),
                          initial=_pool_import_initial(request, team))
    preview = None
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        scale = scale_lookup.scale_for_team(team_id=team.pk, code=data["scale"])
        if data["file"]:
            name, content, mapping = _read_pool_files(data)
        else:
            name, content, mapping = kept.name, bytes(kept.content), (
                None if kept.mapping is None else bytes(kept.mapping))
        parsed = recognise.parse_content(kind=data["format"], content=content,
                                         mapping=mapping, scale=scale,
                                         duplicates=data["duplicates"])
        if "preview" in request.POST or not parsed.ok:
            preview = imports.preview(parsed)
            status = 200 if parsed.ok else 400
            kept_name = name
            # Kept even when lines fail: another scale, format or duplicates choice may be
            # all it needs, and a browser cannot fill a file field again. Not a file over
            # the size limit (it was read only to the limit).
            if data["file"] and _within_limit(content, mapping):
                token = pool.pool_upload_keep(
                    team=team, user=request.user, name=name, content=content,
                    mapping_name=data["mapping"].name if data.get("mapping") else "",
                    mapping=mapping)
            elif data["file"]:
                token, kept_name = "", ""
        else:
            counts = pool.pool_judgments_import(
                team=team, scale=scale.code, judgments=parsed.judgments,
                source=f"{parsed.format_kind}: {name}", user=request.user)
            if token:
                pool.pool_upload_discard(team=team, user=request.user, token=token)
            messages.success(request, (
                f"Imported {counts['imported']} judgments for {counts['keywords']} keywords "
                f"({counts['replaced']} earlier ones replaced"
                + (f", {parsed.duplicate_count} repeated lines skipped"
                   if parsed.duplicate_count else "")
                + (f", {parsed.dropped_count} older lines of repeated pairs dropped"
                   if parsed.dropped_count else "")
                + f"); {counts['dirty_keywords']} keywords with pool metrics are being "
                "recomputed."))
            return redirect("judgments:pool_import")
    else:
        kept_name = kept.name if kept is not None else ""
        if request.method == "POST":
            status = 400
    return render(request, "judgments/pool_import.html", {
        "form": form, "preview": preview, "team": team,
        "pool_count": selectors.pool_judgment_count(team=team),
        "pool_scales": selectors.pool_scales(team=team),
        # The kept file, when there is one to import without choosing it again.
        "upload_token": token if kept_name else "", "kept_name": kept_name,
    }, status=status)


def _pool_import_initial(request: HttpRequest, team: Team) -> dict:
    """Reached from an evaluation (?evaluation=<id>, one of the current team's that the
    user may open): its scale is the one chosen at first."""
    evaluation_id = request.GET.get("evaluation", "")
    if request.method != "GET" or not evaluation_id.isdigit():
        return {}
    evaluation = evaluation_get_for_user(user=request.user, evaluation_id=int(evaluation_id))
    return {"scale": evaluation.scale} if evaluation.team_id == team.pk else {}


def _within_limit(content: bytes, mapping: bytes | None) -> bool:
    return len(content) <= imports.MAX_FILE_BYTES and (
        mapping is None or len(mapping) <= imports.MAX_FILE_BYTES)


def _read_pool_files(data: dict) -> tuple[str, bytes, bytes | None]:
    """The chosen file's name and bytes, and the mapping's bytes. A file over the size
    limit is read as nothing past the limit: the parse answers that it is too large."""
    def read(upload) -> bytes:
        return upload.read(imports.MAX_FILE_BYTES + 1)

    mapping = data.get("mapping")
    return data["file"].name, read(data["file"]), None if mapping is None else read(mapping)


@require_GET
@login_required
def pool_export(request: HttpRequest) -> HttpResponse:
    """The team's imported judgments on `?scale=`: in the per-slot CSV format, which the
    import reads back unchanged, or with `?format=` in another tool's format
    (exports.FOREIGN_FORMATS), one imported row a line or entry."""
    team = access.current_team_access(user=request.user, minimum_role=access.GRADES_ROLE).team
    scale = scale_lookup.scale_for_team(team_id=team.pk, code=request.GET.get("scale", ""))
    if scale is None:
        raise Http404("No such scale.")
    kind = request.GET.get("format", "csv")
    if kind == "csv":
        text = exports.pool_slots_csv(team_id=team.pk, scale=scale.code)
    elif kind in exports.FOREIGN_FORMATS:
        text = "".join(exports.foreign_pool_stream(kind, team=team, scale=scale.code))
    else:
        raise Http404("No such format.")
    response = HttpResponse(text, content_type=exports.CONTENT_TYPES[kind])
    audit_record(action=Action.EXPORT_DOWNLOADED, actor=request.user, team_id=team.pk,
                 object_type="judgment_pool", object_id=scale.code, after={"format": kind})
    name = exports.pool_filename(team_name=team.name, team_id=team.pk, scale=scale.code,
                                 kind=kind)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
