"""What a search model's endpoint is, read from its configuration: the exports that write
for another engine (an Elasticsearch `_rank_eval` body) and the pages that offer them ask
here, so the rule is one."""

from urllib.parse import unquote, urlsplit

from evaluations.models import SearchModel


def elasticsearch_shape(model: SearchModel) -> tuple[str | None, str | None]:
    """(the JSON body template, the index) when the model queries an Elasticsearch-shaped
    `…/<index>/_search` endpoint with a JSON body; (None, None) otherwise (an offline
    model, another engine). The index is None when the URL names none (`/_search`)."""
    endpoint = model.endpoint
    if endpoint is None or model.body is None or model.body_format != model.BodyFormat.JSON:
        return None, None
    path = [unquote(part) for part in urlsplit(endpoint.url).path.split("/") if part]
    if not path or path[-1] != "_search":
        return None, None
    index = path[-2] if len(path) >= 2 and not path[-2].startswith("_") else None
    return model.body, index
