import factory

from evaluations.models import (
    Endpoint,
    Evaluation,
    EvaluationMetric,
    Keyword,
    SearchModel,
    Snapshot,
)
from tests.searchtweak.factories import TeamFactory


class EndpointFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Endpoint

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"Endpoint {n}")
    url = "http://127.0.0.1:9/search"
    mapper = factory.LazyFunction(
        lambda: {"documents": "docs", "id": "id", "name": "title", "image": None, "fields": {}}
    )


class SearchModelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SearchModel

    team = factory.SelfAttribute("endpoint.team")
    endpoint = factory.SubFactory(EndpointFactory)
    name = factory.Sequence(lambda n: f"Model {n}")
    params = factory.LazyFunction(lambda: {"q": "#query#"})


class EvaluationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Evaluation

    team = factory.SelfAttribute("model.team")
    model = factory.SubFactory(SearchModelFactory)
    name = factory.Sequence(lambda n: f"Evaluation {n}")
    scale = "graded"
    strategy = 1


class EvaluationMetricFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EvaluationMetric

    evaluation = factory.SubFactory(EvaluationFactory)
    code = "ndcg"
    k = 10


class KeywordFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Keyword

    evaluation = factory.SubFactory(EvaluationFactory)
    position = factory.Sequence(lambda n: n + 1)
    text = factory.Sequence(lambda n: f"keyword {n}")
    normalized_text = factory.LazyAttribute(lambda k: Keyword.normalize(k.text))


class SnapshotFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Snapshot

    keyword = factory.SubFactory(KeywordFactory)
    position = factory.Sequence(lambda n: n + 1)
    doc_id = factory.Sequence(lambda n: f"doc-{n}")
    name = factory.LazyAttribute(lambda s: f"Document {s.doc_id}")


ES_MAPPER = {"documents": "hits.hits", "id": "_id", "name": "_source.title", "image": None,
             "fields": {"Rank": "_source.rank"}}


def fetchable_evaluation(*, url: str, keywords: list[str], strategy: int = 1,
                         mapper: dict | None = None, timeout_seconds: float = 5.0,
                         params: dict | None = None, body: str | None = None,
                         method: str = "GET", k: int = 10, **endpoint_fields) -> Evaluation:
    """An evaluation of `keywords` against the search server at `url`, ready to start."""
    endpoint = EndpointFactory(url=f"{url}/search", mapper=mapper or ES_MAPPER, method=method,
                               timeout_seconds=timeout_seconds, **endpoint_fields)
    model = SearchModelFactory(endpoint=endpoint, params={"q": "#query#"} if params is None
                               else params, body=body)
    evaluation = EvaluationFactory(model=model, strategy=strategy)
    for position, text in enumerate(keywords, start=1):
        KeywordFactory(evaluation=evaluation, position=position, text=text)
    EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=k)
    return evaluation
