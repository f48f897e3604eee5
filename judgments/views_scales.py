"""The team's scales and the transformers between them: the admins' pages that list,
create, edit and delete them."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from judgments import scale_writes, selectors
from judgments import scales as scale_lookup
from judgments.forms import ScaleForm, TransformerForm
from judgments.models import Scale
from searchtweak.forms import add_service_errors
from searchtweak.models import Role, Team
from searchtweak.views_shared import current_team, form_saved_response, service_step_response


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
