"""The "What users did" panel where a lower app's page shows it (an evaluation's dashboard,
a query set's page, a keyword's page): a tag the page's template loads by name, so that
evaluations and metrics, below behaviour, never import it. The panel's reads are
behaviour.panels.online_panel's: one query for the sources and one or two for the figures.
The dashboard passes its segment choice, so the panel counts the keywords its cards do."""

from django import template

from behaviour.panels import online_panel

register = template.Library()
PANEL = "behaviour/_online_panel.html"


def _panel(context, *, team_id: int, keyword_texts, evaluation_id: int | None = None,
           segment: str = "") -> dict:
    return {"online": online_panel(query=context["request"].GET, team_id=team_id,
                                   keyword_texts=keyword_texts, evaluation_id=evaluation_id,
                                   segment=segment)}


@register.inclusion_tag(PANEL, takes_context=True)
def online_panel_of_evaluation(context, evaluation, segment: str = "") -> dict:
    """`segment`: the dashboard's checked segment choice ("" for every keyword)."""
    return _panel(context, team_id=evaluation.team_id,
                  keyword_texts=evaluation.keywords.values("normalized_text"),
                  evaluation_id=evaluation.pk, segment=segment or "")


@register.inclusion_tag(PANEL, takes_context=True)
def online_panel_of_query_set_version(context, query_set, version) -> dict:
    return _panel(context, team_id=query_set.team_id,
                  keyword_texts=version.keywords.values("normalized_text"))


@register.inclusion_tag(PANEL, takes_context=True)
def online_panel_of_keyword(context, keyword) -> dict:
    return _panel(context, team_id=keyword.evaluation.team_id,
                  keyword_texts=type(keyword).objects.filter(pk=keyword.pk).values(
                      "normalized_text"))
