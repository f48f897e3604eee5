"""An evaluation as an Elasticsearch `_rank_eval` body (metrics.rank_eval), checked against
bodies written by hand from Elasticsearch's ranking evaluation API reference: `requests`
with `id`, `request` (or `template_id` and `params`) and `ratings` of `_index`, `_id`,
`rating`; one `metric` a body."""

import json

import pytest
from rest_framework.test import APIClient

from audit.models import Action, AuditEvent
from tests.metrics.builders import build_evaluation, set_grades, slot

pytestmark = pytest.mark.django_db

ES_BODY = '{"query": {"multi_match": {"query": "#query#", "fields": ["title^2", "body"]}}, ' \
          '"size": 20, "_source": ["title"]}'


@pytest.fixture
def graded(personas):
    """laptop: d1 grades 3,2 (2.5 → 3), d2 0,1 (0.5 → 1), d3 none; "red \"dress\"": r1 2;
    phone: nothing graded (left out)."""
    evaluation = build_evaluation(
        team=personas.team, scale="graded", strategy=3,
        keywords={"laptop": ["d1", "d2", "d3"], 'red "dress"': ["r1"], "phone": ["p1"]},
        metrics=[("ndcg", 10, {"gain": "exponential"}), ("precision", 5, {}), ("ap", 10, {}),
                 ("err", 10, {}), ("rr", 3, {}), ("recall", 10, {}), ("dcg", 4, {})])
    evaluation.name = "Shoes Q3"
    evaluation.save(update_fields=["name"])
    set_grades([personas.owner, personas.lead], [
        (slot(evaluation, "laptop", 1, 0), 3), (slot(evaluation, "laptop", 1, 1), 2),
        (slot(evaluation, "laptop", 2, 0), 0), (slot(evaluation, "laptop", 2, 1), 1),
        (slot(evaluation, 'red "dress"', 1, 0), 2)])
    return evaluation


def _es_shaped(evaluation, url="http://127.0.0.1:9200/products/_search"):
    model, endpoint = evaluation.model, evaluation.model.endpoint
    endpoint.url, endpoint.method = url, "POST"
    endpoint.save(update_fields=["url", "method"])
    model.body, model.params = ES_BODY, {}
    model.save(update_fields=["body", "params"])


def _get(user, evaluation, **params):
    client = APIClient()
    client.force_authenticate(user)
    return client.get(f"/api/v1/evaluations/{evaluation.pk}/rank-eval/", params)


def _ratings(*rows):
    return [{"_index": "products", "_id": doc_id, "rating": rating} for doc_id, rating in rows]


def test_an_elasticsearch_model_gives_its_own_request_per_keyword(personas, graded):
    _es_shaped(graded)
    response = _get(personas.lead, graded)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    exported = AuditEvent.objects.get(action=Action.EXPORT_DOWNLOADED)
    assert (exported.actor_id, exported.object_id, exported.changes) == (
        personas.lead.pk, str(graded.pk),
        {"format": [None, "rank_eval"], "metric": [None, "ndcg@10"]})
    assert response["Content-Disposition"].startswith(
        'attachment; filename="searchtweak-shoes-q3-rank-eval-ndcg-at-10-')
    fields = ["title^2", "body"]
    assert json.loads(response.content) == {
        "requests": [
            {"id": "laptop", "request": {"query": {"multi_match": {
                "query": "laptop", "fields": fields}}},
             "ratings": _ratings(("d1", 3), ("d2", 1))},
            {"id": 'red "dress"', "request": {"query": {"multi_match": {
                "query": 'red "dress"', "fields": fields}}},
             "ratings": _ratings(("r1", 2))},
        ],
        "metric": {"dcg": {"k": 10, "normalize": True}},
    }
    assert response["X-SearchTweak-Notes"] == (
        "nDCG: Elasticsearch's ideal ranking is made of this body's ratings. Left out of "
        "the model's body: _source, size (_rank_eval refuses them or sets them itself: the "
        "size is k).")


@pytest.mark.parametrize(("metric", "expected"), [
    ("precision@5", {"precision": {"k": 5, "relevant_rating_threshold": 1,
                                   "ignore_unlabeled": True}}),
    ("recall@10", {"recall": {"k": 10, "relevant_rating_threshold": 1}}),
    ("rr@3", {"mean_reciprocal_rank": {"k": 3, "relevant_rating_threshold": 1}}),
    ("dcg@4", {"dcg": {"k": 4, "normalize": False}}),
    ("err@10", {"expected_reciprocal_rank": {"k": 10, "maximum_relevance": 3}}),
])
def test_each_metric_maps_to_its_elasticsearch_counterpart(personas, graded, metric, expected):
    # The graded scale's default transformer (docs/METRICS.md): 0 → irrelevant, 1..3 →
    # relevant.
    _es_shaped(graded)
    response = _get(personas.lead, graded, metric=metric)
    assert response.status_code == 200
    assert json.loads(response.content)["metric"] == expected


def test_the_threshold_follows_the_evaluations_own_transformer(personas, graded):
    graded.transformers = {"graded->binary": {"0": 0, "1": 0, "2": 1, "3": 1}}
    graded.save(update_fields=["transformers"])
    _es_shaped(graded)
    response = _get(personas.lead, graded, metric="precision@5")
    assert json.loads(response.content)["metric"] == {"precision": {
        "k": 5, "relevant_rating_threshold": 2, "ignore_unlabeled": True}}


def test_another_engine_gets_a_match_template_on_the_chosen_field(personas, graded):
    response = _get(personas.lead, graded, metric="err@10", index="shop", field="name")
    assert response.status_code == 200
    assert json.loads(response.content) == {
        "requests": [
            {"id": "laptop", "template_id": "searchtweak_match",
             "params": {"query_string": "laptop", "field": "name"},
             "ratings": [{"_index": "shop", "_id": "d1", "rating": 3},
                         {"_index": "shop", "_id": "d2", "rating": 1}]},
            {"id": 'red "dress"', "template_id": "searchtweak_match",
             "params": {"query_string": 'red "dress"', "field": "name"},
             "ratings": [{"_index": "shop", "_id": "r1", "rating": 2}]},
        ],
        "metric": {"expected_reciprocal_rank": {"k": 10, "maximum_relevance": 3}},
        "templates": [{"id": "searchtweak_match", "template": {"inline": {
            "query": {"match": {"{{field}}": {"query": "{{query_string}}"}}}}}}],
    }
    assert response["X-SearchTweak-Notes"] == (
        "The model's endpoint is not Elasticsearch's _search: each request is a match query "
        "on the field 'name'.")


@pytest.mark.parametrize(("params", "expected"), [
    ({"metric": "ap@10"}, {"metric": [
        "Elasticsearch _rank_eval has no ap@10: it has precision, recall, "
        "mean_reciprocal_rank, dcg (normalized: nDCG) and expected_reciprocal_rank."]}),
    ({"metric": "ndcg@5"}, {"metric": [
        "'ndcg@5' is not one of this evaluation's metrics (ndcg@10, precision@5, ap@10, "
        "err@10, rr@3, recall@10, dcg@4)."]}),
    ({}, {"index": ["The model's endpoint names no index: give the index the documents "
                    "live in (each rating names it)."]}),
    ({"index": "a,b"}, {"index": ["'a,b' is not one index: give the index the documents "
                                  "live in (each rating names it)."]}),
])
def test_what_cannot_be_written_is_a_400_naming_the_field(personas, graded, params, expected):
    response = _get(personas.lead, graded, **params)
    assert response.status_code == 400
    assert response.json() == expected


def test_a_linear_gain_is_said_to_differ_and_a_grader_may_not_export(personas, graded):
    _es_shaped(graded)
    response = _get(personas.lead, graded, metric="dcg@4")
    assert response["X-SearchTweak-Notes"].startswith(
        "DCG: Elasticsearch's gain is 2^rating - 1 (our gain=exponential); this metric's "
        "gain is linear, so the values differ.")
    assert _get(personas.grader, graded).status_code == 403


def test_the_feedback_page_offers_a_body_per_metric(client, personas, graded):
    client.force_login(personas.lead)
    page = client.get(f"/feedback/evaluations/{graded.pk}/").content.decode()
    assert f'action="/api/v1/evaluations/{graded.pk}/rank-eval/"' in page
    # The export's own mapping, in the evaluation's order: ap@10 has no counterpart.
    options = page[page.index('id="rank-eval-metric"'):]
    options = options[:options.index("</select>")]
    assert options == (
        'id="rank-eval-metric">'
        '<option value="ndcg@10">ndcg@10 → dcg</option>'
        '<option value="precision@5">precision@5 → precision</option>'
        '<option value="err@10">err@10 → expected_reciprocal_rank</option>'
        '<option value="rr@3">rr@3 → mean_reciprocal_rank</option>'
        '<option value="recall@10">recall@10 → recall</option>'
        '<option value="dcg@4">dcg@4 → dcg</option>')
    assert 'href="/help/moving-from-other-tools/#elasticsearch-rank_eval"' in page


def test_the_form_is_disabled_when_no_metric_has_a_counterpart(client, personas):
    evaluation = build_evaluation(team=personas.team, scale="graded", strategy=1,
                                  keywords={"laptop": ["d1"]}, metrics=[("ap", 10, {})])
    client.force_login(personas.lead)
    page = client.get(f"/feedback/evaluations/{evaluation.pk}/").content.decode()
    assert ('<select name="metric" id="rank-eval-metric" disabled><option value="">none of '
            "this evaluation's metrics</option></select>") in page
    form = page[page.index('data-testid="rank-eval-export"'):]
    assert '<button type="submit" disabled>Download</button>' in form[:form.index("</form>")]


def test_the_form_asks_for_an_index_only_where_the_endpoint_names_none(client, personas,
                                                                         graded):
    # Asked in the form, not answered by the API's 400 page after the click.
    client.force_login(personas.lead)
    page = client.get(f"/feedback/evaluations/{graded.pk}/").content.decode()
    assert ('name="index" id="rank-eval-index" required placeholder="where the documents '
            'live"') in page
    assert "The model's endpoint names no index." in page
    _es_shaped(graded)
    page = client.get(f"/feedback/evaluations/{graded.pk}/").content.decode()
    assert ('name="index" id="rank-eval-index" placeholder="products (the endpoint\'s)"'
            in page)
    assert "names no index" not in page


def test_an_offline_model_gets_the_match_template_too(personas, graded):
    model = graded.model
    model.endpoint = None
    model.save(update_fields=["endpoint"])
    response = _get(personas.lead, graded, metric="rr@3", index="catalog")
    body = json.loads(response.content)
    assert body["requests"][0] == {
        "id": "laptop", "template_id": "searchtweak_match",
        "params": {"query_string": "laptop", "field": "title"},
        "ratings": [{"_index": "catalog", "_id": "d1", "rating": 3},
                    {"_index": "catalog", "_id": "d2", "rating": 1}]}
    assert body["metric"] == {"mean_reciprocal_rank": {"k": 3, "relevant_rating_threshold": 1}}
