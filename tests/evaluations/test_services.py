"""The evaluation lifecycle and the rules services enforce."""

import pytest
from django.core.exceptions import ValidationError

from evaluations import hooks
from evaluations.endpoints import services as endpoint_services
from evaluations.fetching import services as fetch_services
from evaluations.models import Endpoint, Evaluation, EvaluationMetric, Keyword
from evaluations.services import config_checks, configuration, keyword_input, lifecycle
from evaluations.services import keywords as keyword_services
from tests.evaluations.factories import (
    EndpointFactory,
    EvaluationFactory,
    EvaluationMetricFactory,
    KeywordFactory,
    SearchModelFactory,
)

pytestmark = pytest.mark.django_db


def texts(entries) -> list[str]:
    return [entry.text for entry in entries]

MAPPER = {"documents": "hits", "id": "id", "name": "title"}


def create(personas, **overrides) -> Evaluation:
    model = overrides.pop("model", None) or SearchModelFactory(endpoint__team=personas.team)
    fields = {"team": personas.team, "created_by": personas.lead, "model": model,
              "name": "Shoes", "scale": "graded", "strategy": 3,
              "keywords": ["red shoes", "Red Shoes ", "", "blue hat"],
              "metrics": [{"code": "ndcg", "k": 10, "params": {"gain": "exponential"}},
                          {"code": "precision", "k": 5}]}
    return configuration.evaluation_create(**{**fields, **overrides})


def errors(excinfo) -> dict:
    return excinfo.value.message_dict


def test_create_stores_clean_keywords_and_metric_configs(personas):
    evaluation = create(personas)
    assert list(evaluation.keywords.values_list("position", "text", "normalized_text")) == [
        (1, "red shoes", "red shoes"), (2, "blue hat", "blue hat")]
    assert list(evaluation.metric_configs.values_list("code", "k", "params", "position")) == [
        ("ndcg", 10, {"gain": "exponential"}, 0), ("precision", 5, {}, 1)]
    assert (evaluation.status, evaluation.strategy, evaluation.scale) == ("pending", 3, "graded")


def test_keywords_clean_reports_what_it_removed():
    cleaned = keyword_services.keywords_clean(["a", " A", "", "  ", "b", "a"])
    assert cleaned.keywords == ["a", "b"]
    assert cleaned.notice() == "Removed 2 duplicates and 2 blank lines."


def test_keywords_from_a_csv_upload_take_the_first_column():
    content = b"keyword,notes\nred shoes,x\n\"blue, hat\",y\n"
    assert texts(keyword_input.keywords_from_upload(filename="k.csv", content=content)) == [
        "red shoes", "blue, hat"]
    assert texts(keyword_input.keywords_from_upload(
        filename="k.txt", content=b"a\r\nb\n")) == ["a", "b"]


def test_keyword_uploads_skip_a_bom_and_keep_unicode():
    content = "\ufeffcaf\u00e9\nna\u00efve\n".encode()
    assert texts(keyword_input.keywords_from_upload(filename="k.txt", content=content)) == [
        "caf\u00e9", "na\u00efve"]


LONG = b"x" * 501


@pytest.mark.parametrize(("filename", "content", "messages"), [
    ("k.txt", b"red shoes\nblue hat\ncaf\xe9\n",
     ["line 3: not UTF-8 text (byte 0xe9 at column 4)"]),
    # Mixed encodings: every line that is not UTF-8 is named, the UTF-8 ones are not.
    ("k.csv", b"keyword\r\nna\xc3\xafve\r\ncaf\xe9\r\n\xff\r\n\xe2\x82\xac\r\n",
     ["line 3: not UTF-8 text (byte 0xe9 at column 4)",
      "line 4: not UTF-8 text (byte 0xff at column 1)"]),
    ("k.txt", b"a\n" * 11 + LONG + b"\n" + b" " * 600 + b"ok\n",
     ["line 12: keyword longer than 500 characters (501)"]),
    # CSV lines are numbered in the file, header included; a quoted keyword spanning lines
    # is named by its first line.
    ("k.csv", b'keyword\nred shoes\n"two\nlines",x\n' + LONG + b",note\n",
     ["line 5: keyword longer than 500 characters (501)"]),
    ("k.csv", b'a\n"' + b"y" * 600 + b'\nmore"\n',
     ["line 2: keyword longer than 500 characters (605)"]),
])
def test_keyword_upload_errors_name_their_lines(filename, content, messages):
    with pytest.raises(ValidationError) as caught:
        keyword_input.keywords_from_upload(filename=filename, content=content)
    assert caught.value.message_dict == {"keywords_file": messages}


def test_keyword_upload_errors_are_capped():
    content = b"\xff\n" * 60
    with pytest.raises(ValidationError) as caught:
        keyword_input.keywords_from_upload(filename="k.txt", content=content)
    messages = caught.value.message_dict["keywords_file"]
    assert len(messages) == keyword_services.MAX_UPLOAD_ERRORS + 1
    assert messages[0] == "line 1: not UTF-8 text (byte 0xff at column 1)"
    assert messages[49].startswith("line 50: ") and messages[-1] == "… and 10 more errors."


def test_a_csv_field_beyond_the_csv_limit_names_its_line():
    content = b"a\nb\n\"" + b"z" * 200_000 + b'"\n'
    with pytest.raises(ValidationError) as caught:
        keyword_input.keywords_from_upload(filename="k.csv", content=content)
    assert caught.value.message_dict == {"keywords_file": [
        "line 3: field larger than field limit (131072)"]}


@pytest.mark.parametrize(("overrides", "field", "message"), [
    ({"metrics": [{"code": "nope", "k": 3}]}, "metrics", "item 1: metric: unknown metric code"),
    ({"metrics": [{"code": "ndcg", "k": 0}]}, "metrics", "item 1: k: must be an integer >= 1"),
    ({"metrics": [{"code": "ndcg", "k": 3, "params": {"gain": "cubic"}}]}, "metrics",
     "item 1: params.gain: 'cubic' is not one of linear, exponential"),
    ({"scale": "stars"}, "scale", "Unknown scale 'stars'."),
    ({"strategy": 2}, "strategy", "Use 1 or 3 graders per result."),
    ({"transformers": {"graded->binary": {"0": 0}}}, "transformers",
     "transformers.graded->binary: grade 1 is not mapped"),
    ({"keywords": [f"k{i}" for i in range(100_001)]}, "keywords",
     "At most 100,000 keywords (100,001 given)."),
    ({"name": "  "}, "name", "An evaluation needs a name."),
])
def test_create_rejects_bad_input_naming_the_field(personas, overrides, field, message):
    with pytest.raises(ValidationError) as excinfo:
        create(personas, **overrides)
    assert errors(excinfo)[field][0].startswith(message)
    assert not Evaluation.objects.exists()


def test_create_refuses_another_teams_model(personas):
    foreign = SearchModelFactory(endpoint__team=personas.other_team)
    with pytest.raises(ValidationError) as excinfo:
        create(personas, model=foreign)
    assert errors(excinfo) == {"model": ["No such search model in this team."]}


def test_start_moves_to_fetching_and_freezes_scale_strategy_transformers(personas):
    evaluation = create(personas)
    lifecycle.evaluation_start(evaluation=evaluation)  # on-commit fetch never runs here
    evaluation.refresh_from_db()
    assert evaluation.status == "fetching" and evaluation.started_at is not None
    for field, value in (("scale", "binary"), ("strategy", 1),
                         ("transformers", {"graded->binary": {"0": 0, "1": 0, "2": 1, "3": 1}})):
        with pytest.raises(ValidationError) as excinfo:
            configuration.evaluation_update(evaluation=evaluation, **{field: value})
        assert errors(excinfo) == {field: ["cannot change after the evaluation has started"]}
    configuration.evaluation_update(evaluation=evaluation, name="Renamed", tags=["q3", "q3", " x "])
    evaluation.refresh_from_db()
    assert (evaluation.name, evaluation.tags) == ("Renamed", ["q3", "x"])


def test_lifecycle_pending_fetching_active_pause_start_finish(personas):
    evaluation = create(personas)
    lifecycle.evaluation_start(evaluation=evaluation)
    Keyword.objects.filter(evaluation=evaluation).update(fetch_status="fetched")
    assert fetch_services.evaluation_fetch_complete(evaluation_id=evaluation.pk)
    evaluation.refresh_from_db()
    assert evaluation.status == "active"
    lifecycle.evaluation_pause(evaluation=evaluation)
    evaluation.refresh_from_db()
    assert evaluation.status == "pending"
    # Nothing is left to fetch, so the next start goes straight to active.
    lifecycle.evaluation_start(evaluation=evaluation)
    evaluation.refresh_from_db()
    assert evaluation.status == "active"
    lifecycle.evaluation_finish(evaluation=evaluation)
    finished = Evaluation.objects.get(pk=evaluation.pk)
    assert finished.status == "finished" and finished.finished_at is not None
    # Idempotent: the recompute may call it again at 100 %.
    again = lifecycle.evaluation_finish(evaluation=finished)
    assert (again.status, again.finished_at) == ("finished", finished.finished_at)


@pytest.mark.parametrize(("action", "status", "message"), [
    (lifecycle.evaluation_start, "active", "Only a pending evaluation can start (it is active)."),
    (lifecycle.evaluation_pause, "pending",
     "Only a fetching or active evaluation can pause (it is pending)."),
    (lifecycle.evaluation_finish, "fetching",
     "Wait until fetching ends, or pause, before finishing."),
    (lifecycle.evaluation_delete, "fetching", "Pause the evaluation before deleting it."),
    (lifecycle.evaluation_archive, "fetching", "Pause the evaluation before archiving it."),
])
def test_actions_refuse_the_wrong_status(action, status, message):
    evaluation = EvaluationFactory(status=status)
    KeywordFactory(evaluation=evaluation)
    with pytest.raises(ValidationError) as excinfo:
        action(evaluation=evaluation)
    assert errors(excinfo) == {"status": [message]}
    assert Evaluation.objects.get(pk=evaluation.pk).status == status


def test_finish_refuses_an_evaluation_that_never_started():
    evaluation = EvaluationFactory()
    with pytest.raises(ValidationError) as excinfo:
        lifecycle.evaluation_finish(evaluation=evaluation)
    assert errors(excinfo) == {"status": ["An evaluation that never started cannot finish."]}


def test_start_needs_keywords_and_metrics():
    evaluation = EvaluationFactory()
    with pytest.raises(ValidationError) as excinfo:
        lifecycle.evaluation_start(evaluation=evaluation)
    assert errors(excinfo) == {"keywords": ["Add at least one keyword."]}
    KeywordFactory(evaluation=evaluation)
    with pytest.raises(ValidationError) as excinfo:
        lifecycle.evaluation_start(evaluation=evaluation)
    assert errors(excinfo) == {"metrics": ["Configure at least one metric."]}


@pytest.fixture
def custom_scale():
    previous = hooks.scale_provider()
    builtin = previous

    def bounds(team, code):
        return (1, 5) if code == "stars" else builtin.bounds(team, code)

    hooks.register_scale_provider(hooks.ScaleProvider(
        choices=lambda team: [*builtin.choices(team), ("stars", "Stars 1..5")],
        bounds=bounds, transformers=lambda team: {}))
    yield
    hooks.register_scale_provider(previous)


def test_start_refuses_a_custom_scale_without_a_transformer_for_binary_metrics(custom_scale):
    evaluation = EvaluationFactory(scale="stars")
    KeywordFactory(evaluation=evaluation)
    EvaluationMetricFactory(evaluation=evaluation, code="ndcg", k=5)  # graded: reads stars
    EvaluationMetricFactory(evaluation=evaluation, code="precision", k=5)
    with pytest.raises(ValidationError) as excinfo:
        lifecycle.evaluation_start(evaluation=evaluation)
    assert errors(excinfo) == {"metrics": [STARS_TO_BINARY_MISSING]}
    configuration.evaluation_update(evaluation=evaluation, transformers={
        "stars->binary": {"1": 0, "2": 0, "3": 1, "4": 1, "5": 1}})
    lifecycle.evaluation_start(evaluation=evaluation)
    assert Evaluation.objects.get(pk=evaluation.pk).status == "fetching"


STARS_TO_BINARY_MISSING = (
    "P@5 needs grades on the binary scale: an admin must define a transformer from "
    "'Stars 1..5' to binary under Scales (or give this evaluation one in its transformer "
    "overrides).")


def test_create_refuses_a_metric_whose_scale_has_no_transformer_from_the_custom_one(
        personas, custom_scale):
    with pytest.raises(config_checks.MissingTransformerError) as excinfo:
        create(personas, scale="stars", metrics=[{"code": "ndcg", "k": 10},
                                                 {"code": "precision", "k": 5}])
    assert errors(excinfo) == {"metrics": [STARS_TO_BINARY_MISSING]}
    assert (excinfo.value.source, excinfo.value.target) == ("stars", "binary")
    assert not Evaluation.objects.exists()
    assert not EvaluationMetric.objects.exists()


def test_create_accepts_a_custom_scale_with_the_evaluations_own_transformer(
        personas, custom_scale):
    evaluation = create(personas, scale="stars", metrics=[{"code": "precision", "k": 5}],
                        transformers={"stars->binary": {"1": 0, "2": 0, "3": 1, "4": 1, "5": 1}})
    assert list(evaluation.metric_configs.values_list("code", flat=True)) == ["precision"]


def test_update_refuses_a_metric_without_a_transformer_and_keeps_the_old_ones(
        personas, custom_scale):
    evaluation = create(personas, scale="stars", metrics=[{"code": "ndcg", "k": 10}])
    with pytest.raises(ValidationError) as excinfo:
        configuration.evaluation_update(evaluation=evaluation, name="Renamed", metrics=[
            {"code": "ndcg", "k": 10}, {"code": "precision", "k": 5}])
    assert errors(excinfo) == {"metrics": [STARS_TO_BINARY_MISSING]}
    evaluation.refresh_from_db()
    assert evaluation.name == "Shoes"
    assert list(evaluation.metric_configs.values_list("code", "k")) == [("ndcg", 10)]


def test_update_refuses_switching_to_a_custom_scale_that_existing_metrics_cannot_read(
        personas, custom_scale):
    evaluation = create(personas, metrics=[{"code": "precision", "k": 5}])
    with pytest.raises(ValidationError) as excinfo:
        configuration.evaluation_update(evaluation=evaluation, scale="stars")
    assert errors(excinfo) == {"metrics": [STARS_TO_BINARY_MISSING]}
    evaluation.refresh_from_db()
    assert evaluation.scale == "graded"


def test_keywords_can_be_added_but_not_removed_after_the_first_start(personas):
    evaluation = create(personas)
    lifecycle.evaluation_start(evaluation=evaluation)
    lifecycle.evaluation_pause(evaluation=evaluation)
    with pytest.raises(ValidationError) as excinfo:
        configuration.evaluation_update(evaluation=evaluation, keywords=["red shoes"])
    assert errors(excinfo)["keywords"][0].startswith("cannot remove keywords after the first")
    configuration.evaluation_update(evaluation=evaluation,
                                    keywords=["red shoes", "blue hat", "green scarf"])
    assert list(evaluation.keywords.values_list("position", "text")) == [
        (1, "red shoes"), (2, "blue hat"), (3, "green scarf")]


def test_metrics_can_be_replaced_keeping_unchanged_configs(personas):
    evaluation = create(personas)
    kept = evaluation.metric_configs.get(code="precision")
    configuration.evaluation_update(evaluation=evaluation, metrics=[
        {"code": "precision", "k": 5, "params": {}}, {"code": "err", "k": 10, "params": {}}])
    assert list(evaluation.metric_configs.values_list("pk", "code", "position")) == [
        (kept.pk, "precision", 0), (evaluation.metric_configs.get(code="err").pk, "err", 1)]


def test_clone_copies_configuration_and_keywords_but_nothing_fetched(personas):
    evaluation = create(personas, tags=["a"])
    lifecycle.evaluation_start(evaluation=evaluation)
    clone = configuration.evaluation_clone(evaluation=evaluation, created_by=personas.lead)
    assert (clone.name, clone.status, clone.started_at, clone.tags) == (
        "Shoes (copy)", "pending", None, ["a"])
    assert list(clone.keywords.values_list("text", "fetch_status")) == [
        ("red shoes", "pending"), ("blue hat", "pending")]
    assert EvaluationMetric.objects.filter(evaluation=clone).count() == 2


def test_delete_of_a_used_endpoint_archives_it(personas):
    endpoint = EndpointFactory(team=personas.team)
    unused = EndpointFactory(team=personas.team)
    SearchModelFactory(endpoint=endpoint)
    assert endpoint_services.endpoint_delete(endpoint=endpoint) is False
    assert Endpoint.objects.get(pk=endpoint.pk).archived_at is not None
    assert endpoint_services.endpoint_delete(endpoint=unused) is True
    assert not Endpoint.objects.filter(pk=unused.pk).exists()


def test_endpoint_masked_secrets_round_trip_and_new_values_replace_them(personas):
    endpoint = endpoint_services.endpoint_create(
        team=personas.team, created_by=personas.admin, name="E", url="https://search.test/q",
        mapper=MAPPER, secret_headers={"X-Custom": "abcdefgh12345678"})
    endpoint_services.endpoint_update(endpoint=endpoint,
                                      headers={"X-Custom": "••••5678", "Accept": "x"})
    assert endpoint_services.endpoint_secret_headers(endpoint=endpoint) == {
        "X-Custom": "abcdefgh12345678"}
    assert endpoint.headers == {"Accept": "x"}
    endpoint_services.endpoint_update(endpoint=endpoint,
                                      secret_headers={"X-Custom": "new-value-000000"})
    assert endpoint_services.endpoint_secret_headers(endpoint=endpoint) == {
        "X-Custom": "new-value-000000"}
    assert endpoint.headers == {"Accept": "x"}


@pytest.mark.parametrize(("mapper", "field", "message"), [
    ({"documents": "hits[", "id": "id", "name": "n"}, "mapper.documents", "invalid JMESPath"),
    ({"documents": "hits", "name": "n"}, "mapper.id", "is required"),
    ({"documents": "hits", "id": "id", "name": "n", "fields": {"Price": "a..b"}},
     "mapper.fields.Price", "invalid JMESPath"),
])
def test_endpoint_mapper_errors_name_the_mapper_field(personas, mapper, field, message):
    with pytest.raises(ValidationError) as excinfo:
        endpoint_services.endpoint_create(team=personas.team, created_by=None, name="E",
                                          url="https://x.test/", mapper=mapper)
    assert errors(excinfo)[field][0].startswith(message)


def test_a_model_needs_the_query_placeholder_and_valid_json(personas):
    endpoint = EndpointFactory(team=personas.team, url="https://x.test/search")
    with pytest.raises(ValidationError) as excinfo:
        endpoint_services.search_model_create(
            team=personas.team, created_by=None, endpoint=endpoint, name="m", params={"q": "shoes"})
    assert errors(excinfo)["params"][0].startswith("Put #query# where the keyword goes")
    with pytest.raises(ValidationError) as excinfo:
        endpoint_services.search_model_create(
            team=personas.team, created_by=None, endpoint=endpoint, name="m", body='{"q": #query#}')
    assert errors(excinfo)["body"][0].startswith("not valid JSON")
