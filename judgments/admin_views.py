"""The team's admin pages for grading: scales, transformers, grader routing tags, and the
import of judgments into the team's pool (leads and up)."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluations.selectors import evaluation_get_for_user
from judgments import exports, imports, pool, scale_writes, selectors
from judgments import scales as scale_lookup
from judgments.forms import GraderTagsForm, PoolImportForm, ScaleForm, TransformerForm
from judgments.grader_tags import grader_tags_set
from judgments.models import Scale
from searchtweak import access
from searchtweak.forms import add_service_errors
from searchtweak.models import Role, Team
from searchtweak.selectors import team_members
from searchtweak.views_shared import current_team, form_saved_response, service_step_response

# --- admins: scales, transformers, grader tags of the current team ---


def _admin_team(request: HttpRequest) -> Team:
    return current_team(request, Role.ADMIN, reason=selectors.ADMIN_REASON)


@require_GET
@login_required
def scale_list(request: HttpRequest) -> HttpResponse:
    team = _admin_team(request)
    rows = {row.code: row for row in team.scales.all()}
    return render(request, "judgments/scale_list.html", {
        "team": team,
        "scales": [(scale, rows.get(scale.code))
                   for scale in scale_lookup.scales_for_team(team_id=team.pk)],
        "transformers": team.transformers.all(),
        "defaults": _default_transformers(),
    })


def _default_transformers() -> list[tuple[str, str, str]]:
    rows = []
    for source in ("binary", "graded", "detail"):
        for target in ("binary", "graded", "detail"):
            if source != target:
                mapping = scale_lookup.default_mapping(
                    scale_lookup.builtin_scale(source), scale_lookup.builtin_scale(target))
                rows.append((source, target, ", ".join(f"{k}→{v}" for k, v in mapping.items())))
    return rows


@require_http_methods(["GET", "POST"])
@login_required
def scale_create(request: HttpRequest) -> HttpResponse:
    team = _admin_team(request)
    form = ScaleForm(request.POST or None)
    saved = form_saved_response(
        request, form, lambda: scale_writes.scale_create(team=team, **form.cleaned_data),
        success=lambda _: f"Scale {form.cleaned_data['name']} created.",
        next_url="judgments:scales")
    return saved or _render_scale_form(request, form, None)


def _render_scale_form(request: HttpRequest, form: ScaleForm, scale: Scale | None,
                       ) -> HttpResponse:
    return render(request, "judgments/scale_form.html", {"form": form, "scale": scale},
                  status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def scale_edit(request: HttpRequest, scale_id: int) -> HttpResponse:
    scale = selectors.scale_get_for_user(user=request.user, scale_id=scale_id)
    initial = {"code": scale.code, "name": scale.name, "lo": scale.lo, "hi": scale.hi,
               "labels": ScaleForm.labels_text(scale.labels)}
    form = ScaleForm(request.POST or None, initial=initial, editing=True)
    saved = form_saved_response(
        request, form, lambda: scale_writes.scale_update(
            scale=scale, **{k: v for k, v in form.cleaned_data.items() if k != "code"}),
        success=lambda _: f"Scale {scale.name} saved.", next_url="judgments:scales")
    return saved or _render_scale_form(request, form, scale)


@require_POST
@login_required
def scale_delete(request: HttpRequest, scale_id: int) -> HttpResponse:
    scale = selectors.scale_get_for_user(user=request.user, scale_id=scale_id)
    return service_step_response(request, lambda: scale_writes.scale_delete(scale=scale),
                                   done=f"Scale {scale.name} deleted.",
                                   next_url="judgments:scales")


@require_http_methods(["GET", "POST"])
@login_required
def transformer_edit(request: HttpRequest) -> HttpResponse:
    """Create or replace the team's transformer between two scales: one row per grade of
    the source, prefilled with the current mapping (the team's own, else the
    docs/METRICS.md default). `?source=&target=`, or posting "show", picks the rows
    without JavaScript; transformer.js rebuilds them in place from data attributes. The
    posted "shown" names the pair the rows were built for."""
    team = _admin_team(request)
    team_scales = scale_lookup.scales_for_team(team_id=team.pk)
    known = {scale.code: scale for scale in team_scales}
    mappings = _known_mappings(team, team_scales)
    switched_notice = ""
    posted_pair = f"{request.POST.get('source', '')}->{request.POST.get('target', '')}"
    # Scales changed without JavaScript and then Save: the rows posted belong to the pair
    # shown before, so show the new pair's rows instead of saving those under it.
    switched = request.method == "POST" and request.POST.get("shown", posted_pair) != posted_pair
    if request.method == "POST" and "show" not in request.POST and not switched:
        form = TransformerForm(request.POST, scales=team_scales,
                               source=request.POST.get("source", ""),
                               target=request.POST.get("target", ""))
        if form.is_valid():
            data = form.cleaned_data
            try:
                scale_writes.transformer_save(team=team, source=data["source"],
                                              target=data["target"], mapping=data["mapping"])
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                messages.success(request,
                                 f"Transformer {data['source']} → {data['target']} saved.")
                return redirect("judgments:scales")
    else:
        # A GET, or "Show the grades" of the form without JavaScript: rows for the scales.
        chosen = request.GET if request.method == "GET" else request.POST
        source = chosen.get("source", "")
        source = source if source in known else "graded"
        target = chosen.get("target", "")
        if target not in known or target == source:
            target = next(code for code in known if code != source)
        if switched:
            switched_notice = (f"The grades shown were for other scales; pick them for "
                               f"{source} → {target} and save again.")
        form = TransformerForm(scales=team_scales, source=source, target=target, initial={
            "source": source, "target": target,
            **TransformerForm.initial_for(mappings.get(f"{source}->{target}")),
        })
    return render(request, "judgments/transformer_form.html", {
        "form": form,
        # Read by transformer.js; autoescaping keeps the JSON intact inside the attribute.
        "scales_json": json.dumps({
            code: [{"value": g.value, "label": g.label} for g in scale.grades]
            for code, scale in known.items()}),
        "mappings_json": json.dumps(mappings),
        "shown_pair": f"{form['source'].value()}->{form['target'].value()}",
        "switched_notice": switched_notice,
    }, status=400 if form.errors or switched_notice else 200)


def _known_mappings(
    team: Team, team_scales: list[scale_lookup.GradeScale]
) -> dict[str, dict[str, int]]:
    """Every "src->dst" pair of the team's scales that has a mapping: the team's own, else
    the default between built-ins."""
    mappings = {}
    for source in team_scales:
        for target in team_scales:
            if source.code != target.code:
                default = scale_lookup.default_mapping(source, target)
                if default is not None:
                    mappings[f"{source.code}->{target.code}"] = {
                        str(k): v for k, v in default.items()}
    return mappings | scale_lookup.transformer_mappings(team_id=team.pk)


@require_POST
@login_required
def transformer_delete(request: HttpRequest, transformer_id: int) -> HttpResponse:
    transformer = selectors.transformer_get_for_user(
        user=request.user, transformer_id=transformer_id)
    return service_step_response(
        request, lambda: scale_writes.transformer_delete(transformer=transformer),
        done=f"Transformer {transformer} removed; the default applies again.",
        next_url="judgments:scales")


@require_GET
@login_required
def grader_tags(request: HttpRequest) -> HttpResponse:
    team = _admin_team(request)
    tags = selectors.team_grader_tags(team=team)
    members = [(m, ", ".join(tags.get(m.user_id, []))) for m in team_members(team=team)]
    return render(request, "judgments/grader_tags.html", {"team": team, "members": members})


@require_POST
@login_required
def grader_tags_update(request: HttpRequest, user_id: int) -> HttpResponse:
    team = _admin_team(request)
    membership = team_members(team=team).filter(user_id=user_id).first()
    if membership is None:
        raise Http404("No such member.")
    form = GraderTagsForm(request.POST)
    if form.is_valid():
        row = grader_tags_set(team=team, user=membership.user,
                              tags=form.cleaned_data["tags"])
        messages.success(request, f"{membership.user.username} carries: "
                         f"{', '.join(row.tags) or 'no tags'}.")
    else:
        messages.error(request, " ".join(form.errors.get("tags", ["Invalid tags."])))
    return redirect("judgments:grader_tags")


# --- the team's judgment pool ---


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
        parsed = imports.parse_content(kind=data["format"], content=content, mapping=mapping,
                                       scale=scale, duplicates=data["duplicates"])
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
                source=f"{data['format']}: {name}", user=request.user)
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
    """The team's imported judgments on `?scale=` in the per-slot CSV format, which the
    import reads back unchanged."""
    team = access.current_team_access(user=request.user, minimum_role=access.GRADES_ROLE).team
    scale = scale_lookup.scale_for_team(team_id=team.pk, code=request.GET.get("scale", ""))
    if scale is None:
        raise Http404("No such scale.")
    response = HttpResponse(exports.pool_slots_csv(team_id=team.pk, scale=scale.code),
                            content_type="text/csv; charset=utf-8")
    name = exports.pool_filename(team_name=team.name, team_id=team.pk, scale=scale.code)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
