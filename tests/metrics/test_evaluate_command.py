"""`manage.py evaluate` against a real search server on 127.0.0.1 with eager Celery."""

import io

import pytest
from django.core.management import CommandError, call_command

from evaluations.models import Evaluation, Keyword
from tests.evaluations.factories import ES_MAPPER, EndpointFactory, SearchModelFactory
from tests.evaluations.servers import running_server
from tests.metrics.builders import build_evaluation, set_grades, slot

# Transactional: the fetch tasks go out after the start commits, as in production.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server():
    with running_server() as server:
        yield server


@pytest.fixture
def model(personas, server):
    """A model of the team on the test server, and an earlier graded evaluation of "shoes"
    whose grades the new evaluation reuses (documents shoes-1..3 graded 3, 0, 2)."""
    endpoint = EndpointFactory(team=personas.team, url=f"{server.url}/search", mapper=ES_MAPPER)
    earlier = build_evaluation(team=personas.team, scale="graded", strategy=1,
                               keywords={"Shoes": ["shoes-1", "shoes-2", "shoes-3"]},
                               metrics=[("ndcg", 3, {})])
    set_grades([personas.grader], [(slot(earlier, "shoes", 1), 3),
                                   (slot(earlier, "shoes", 2), 0),
                                   (slot(earlier, "shoes", 3), 2)])
    return SearchModelFactory(endpoint=endpoint, team=personas.team, params={"q": "#query#"})


@pytest.fixture
def keywords_file(tmp_path):
    path = tmp_path / "keywords.txt"
    path.write_text("shoes\nboots\n")
    return path


def _run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", *args, "--quiet", "--wait-timeout", "30", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_creates_fetches_and_prints_the_metrics_from_reused_grades(model, keywords_file,
                                                                       server):
    out, err = _run("--model", str(model.pk), "--keywords", str(keywords_file),
                    "--metric", "ndcg@3", "--metric", "p@2", "--name", "CI run",
                    "--fail-under", "ndcg@3=0.9")
    evaluation = Evaluation.objects.get(name="CI run")
    assert evaluation.status == Evaluation.Status.ACTIVE
    assert sorted(server.queries()) == ["boots", "shoes"]
    assert set(evaluation.keywords.values_list("fetch_status", flat=True)) == {
        Keyword.FetchStatus.FETCHED}
    lines = out.splitlines()
    assert lines[0].split() == ["metric", "value", "keywords"]
    # Grades [3, 0, 2], linear gain, local ideal (docs/METRICS.md): DCG = 3/1 + 0/log2 3 +
    # 2/2 = 4; IDCG from [3, 2, 0] = 3 + 2/log2 3 = 4.2619; nDCG = 4 / 4.2619 = 0.9386.
    assert lines[1].split() == ["ndcg@3", "0.9386", "1"]
    assert lines[2].split() == ["precision@2", "0.5000", "1"]
    assert lines[-1] == f"Evaluation {evaluation.pk}: OK"
    assert f"Evaluation {evaluation.pk} started." in err


def test_it_exits_2_below_a_threshold(model, keywords_file):
    with pytest.raises(CommandError) as failure:
        _run("--model", str(model.pk), "--keywords", str(keywords_file),
             "--metric", "ndcg@3", "--fail-under", "ndcg@3=0.99")
    assert failure.value.returncode == 2
    assert "ndcg@3 = 0.9" in str(failure.value) and "is below 0.99" in str(failure.value)


def test_it_exits_2_when_a_thresholded_value_is_null(model, tmp_path):
    path = tmp_path / "new.txt"
    path.write_text("boots\n")
    with pytest.raises(CommandError) as failure:
        _run("--model", str(model.pk), "--keywords", str(path), "--metric", "ndcg@3",
             "--fail-under", "ndcg@3=0.1")
    assert failure.value.returncode == 2 and "ndcg@3 is null" in str(failure.value)


@pytest.mark.parametrize(("args", "message"), [
    (["--metric", "nope@3"], "unknown metric code 'nope'"),
    (["--metric", "ndgc@3"], r"unknown metric code 'ndgc'; did you mean 'ndcg'\?"),
    (["--metric", "ndcg"], "is not code@k"),
    (["--metric", "ndcg@3", "--fail-under", "p@5=0.5"], "precision@5 is not one of"),
    (["--metric", "ndcg@3", "--scale", "stars"], "scale: Unknown scale 'stars'."),
])
def test_bad_arguments_create_nothing(model, keywords_file, args, message):
    count = Evaluation.objects.count()
    with pytest.raises(CommandError, match=message) as failure:
        _run("--model", str(model.pk), "--keywords", str(keywords_file), *args)
    assert failure.value.returncode == 1
    assert Evaluation.objects.count() == count


def test_gate_against_the_same_results_is_no_change_at_any_coverage(model, keywords_file):
    """`--gate`: the new evaluation (shoes reused from the earlier one, boots ungraded: half
    the keywords with a value) against the earlier evaluation, which returned the same
    documents for the one keyword they share: same results, cannot differ; no change, which
    passes even with --undecided fail."""
    from metrics.models import RegressionVerdict

    earlier = Evaluation.objects.get(keywords__text="Shoes")
    out, _ = _run("--model", str(model.pk), "--keywords", str(keywords_file),
                  "--metric", "ndcg@3", "--gate", "--baseline", str(earlier.pk),
                  "--undecided", "fail")
    assert f"against '{earlier.name}' ({earlier.pk}): No change" in out
    assert ("nDCG@3: same results, cannot differ (the rankings are identical, RBO 1, on every "
            "shared keyword).") in out
    assert out.splitlines()[-1].startswith("Gate passed (verdict ")
    assert list(RegressionVerdict.objects.values_list("source", "verdict")) == [
        ("command", "no_change")]


def test_gate_undecided_passes_unless_told_to_fail(model, keywords_file, personas):
    """Against an ungraded evaluation of "boots" with other documents: the bounds overlap
    and only 1 of 2 keywords has a value (50 %): undecided, which passes unless
    --undecided fail, then exit 3."""
    from metrics.models import RegressionVerdict

    other = build_evaluation(team=personas.team, scale="graded", strategy=1,
                             keywords={"Boots": ["other-1", "other-2", "other-3"]},
                             metrics=[("ndcg", 3, {})])
    out, _ = _run("--model", str(model.pk), "--keywords", str(keywords_file),
                  "--metric", "ndcg@3", "--gate", "--baseline", str(other.pk))
    assert f"against '{other.name}' ({other.pk}): Undecided" in out
    assert ("Undecided: nDCG@3: only 1 of 2 keywords have a value (50 %), below the minimum "
            "90 %.") in out
    assert out.splitlines()[-1].startswith("Gate passed (verdict ")
    with pytest.raises(CommandError) as failure:
        _run("--model", str(model.pk), "--keywords", str(keywords_file),
             "--metric", "ndcg@3", "--gate", "--baseline", str(other.pk),
             "--undecided", "fail")
    assert failure.value.returncode == 3
    assert "GATE FAILED: undecided" in str(failure.value)
    assert list(RegressionVerdict.objects.values_list("source", "verdict")) == [
        ("command", "undecided"), ("command", "undecided")]


def test_without_evaluation_the_model_keywords_and_metrics_are_required(model):
    with pytest.raises(CommandError, match="--keywords, --metric: required") as failure:
        _run("--model", str(model.pk))
    assert failure.value.returncode == 1


def test_the_keyword_file_is_recognised_as_a_query_sets_and_an_ambiguous_one_refused(
        model, tmp_path, server):
    quepid = tmp_path / "ratings"
    quepid.write_text("query,docid,rating\nshoes,11,3\nboots,,\nshoes,12,0\n")
    _run("--model", str(model.pk), "--keywords", str(quepid), "--metric", "ndcg@3",
         "--name", "From Quepid")
    evaluation = Evaluation.objects.get(name="From Quepid")
    assert list(evaluation.keywords.order_by("position").values_list("text", flat=True)) == [
        "shoes", "boots"]

    ambiguous = tmp_path / "keywords"
    ambiguous.write_text("shoes\nshoes, red\n")
    with pytest.raises(CommandError, match=r"keywords_file: line 2: a comma or double quote"):
        _run("--model", str(model.pk), "--keywords", str(ambiguous), "--metric", "ndcg@3",
             "--name", "Ambiguous")
    assert not Evaluation.objects.filter(name="Ambiguous").exists()
    _run("--model", str(model.pk), "--keywords", str(ambiguous), "--keywords-format", "text",
         "--metric", "ndcg@3", "--name", "Chosen")
    assert list(Evaluation.objects.get(name="Chosen").keywords.order_by("position")
                .values_list("text", flat=True)) == ["shoes", "shoes, red"]
