"""seed_demo_history: two demo models that differ, a finished baseline and a partly graded
candidate, graded by people who disagree, and a clicks grader learned from the demo log."""

from base64 import b64decode
from collections import Counter, defaultdict

import pytest
from django.core.management import call_command
from django.urls import reverse

from behaviour import demo as behaviour_demo
from behaviour.models import LearnedGrade
from evaluations import demo
from evaluations.models import DemoProduct, Evaluation
from judges.models import Judge, JudgeRun, JudgeRunItem
from judgments.models import FeedbackSlot
from metrics.management.commands import seed_demo_history as history
from metrics.models import KeywordMetricValue, RegressionVerdict, TeamBaseline
from metrics_engine import agreement
from searchtweak.models import User

pytestmark = pytest.mark.django_db


def product(title: str, category: str, description: str = "") -> DemoProduct:
    return DemoProduct(sku="X1", title=title, description=description, category=category,
                       brand="Tern", color="red", price=10)


@pytest.mark.parametrize(("query", "title", "category", "grade"), [
    # The noun and every detail in the title: exactly what was asked for.
    ("waterproof hiking boots", "Tern waterproof red hiking boots", "Footwear", 3),
    # One detail missing (another trait): close.
    ("waterproof hiking boots", "Tern leather red hiking boots", "Footwear", 2),
    # The detail only in the description does not count: the listing does not promise it.
    ("red sneakers", "Tern vegan blue sneakers", "Footwear", 2),
    # Two details missing: the right kind of product, little more.
    ("women's down parka", "Tern packable blue men's down parka", "Outerwear", 2),
    ("noise cancelling headphones", "Tern portable red wireless headphones", "Electronics", 1),
    # Another product of the same category; another category altogether.
    ("running shoes", "Tern leather red sandals", "Footwear", 1),
    ("running shoes", "Tern oak red bookshelf", "Home", 0),
])
def test_relevance_follows_the_demo_guidelines(query, title, category, grade):
    assert demo.relevance(query, product(title, category, "waterproof everything")) == grade


def test_the_cheap_first_ranking_is_the_relevance_top_100_by_price(client):
    relevant = client.get("/demo/search", {"q": "hiking boots", "size": 100}).json()["hits"]
    cheap = client.get("/demo/search", {"q": "hiking boots", "size": 10,
                                        "ranking": "cheap-first"}).json()["hits"]
    expected = sorted(relevant, key=lambda hit: (hit["price"], hit["id"]))[:10]
    assert [hit["id"] for hit in cheap] == [hit["id"] for hit in expected]
    assert [hit["id"] for hit in cheap] != [hit["id"] for hit in relevant[:10]]
    response = client.get("/demo/search", {"q": "boots", "ranking": "random"})
    assert response.status_code == 400
    assert response.json() == {
        "error": "ranking must be one of relevance, cheap-first, head-tuned"}


def test_the_head_tuned_ranking_is_relevance_on_the_head_and_torso_cheap_first_on_the_tail(
        client):
    def ids(query: str, ranking: str) -> list[str]:
        return [hit["id"] for hit in client.get("/demo/search", {
            "q": query, "size": 10, "ranking": ranking}).json()["hits"]]

    # "running shoes" (5,200 searches a day) is the head; "resistance bands" (500) the tail.
    assert "running shoes" in demo.head_tuned_queries()
    assert "resistance bands" not in demo.head_tuned_queries()
    assert ids("running shoes", "head-tuned") == ids("running shoes", "relevance")
    assert ids("resistance bands", "head-tuned") == ids("resistance bands", "cheap-first")
    assert ids("resistance bands", "head-tuned") != ids("resistance bands", "relevance")
    # Head and torso: the 22 most asked of the 50, 80 % of the searches.
    assert len(demo.head_tuned_queries()) == 22


def test_tiles_differ_by_category_and_name_what_the_product_is():
    boots = product("Tern waterproof red hiking boots", "Footwear")
    lamp = product("Tern dimmable red desk lamp", "Home")
    assert demo.product_noun(boots) == "hiking boots"
    assert demo.product_image(boots) != demo.product_image(lamp)
    svg = b64decode(demo.product_image(boots).split(",", 1)[1]).decode()
    assert ">HB</text>" in svg and ">Footwear</text>" in svg
    assert "<path" in svg  # the category's shape


def _means(evaluation: Evaluation) -> dict[str, float]:
    return {config.code: config.value for config in evaluation.metric_configs.with_stored_mean()}


@pytest.mark.slow_reason("runs seed_demo and seed_demo_history, the commands under test")
def _quadratic_kappa(pairs: list[tuple[int, int]], grades: list[int]) -> float:
    """Cohen's κ with quadratic weights from its textbook definition: 1 - Σ w·observed /
    Σ w·expected, w = (i - j)² / (k - 1)², expected from the two margins."""
    k, n = len(grades), len(pairs)
    observed = Counter(pairs)
    rows = Counter(person for person, _ in pairs)
    columns = Counter(judge for _, judge in pairs)
    weight = {(i, j): (i - j) ** 2 / (k - 1) ** 2 for i in grades for j in grades}
    seen = sum(weight[cell] * count for cell, count in observed.items()) / n
    chance = sum(weight[i, j] * rows[i] * columns[j] for i in grades for j in grades) / n ** 2
    return 1 - seen / chance


def _check_the_clicks_grader(client, baseline: Evaluation) -> None:
    """The demo's clicks grader: a judge learned from the demo log, its shadow run on the
    baseline finished, its calibration page against the three graders' grades."""
    judge = Judge.objects.get(team=baseline.team, name=behaviour_demo.GRADER_NAME)
    grader = judge.click_grader
    assert (judge.provider, judge.counts, grader.click_model, grader.cuts) == (
        "clicks", False, "pbm", [0.06, 0.2, 0.5])
    assert grader.source.name == behaviour_demo.SOURCE_NAME
    run = JudgeRun.objects.get(judge=judge)
    assert (run.evaluation_id, run.mode, run.status) == (baseline.pk, "shadow", "done")
    # Every result of the 50 keywords was shown often enough: 500 learned, none failed.
    assert (run.pair_count, run.done_count, run.failed_count) == (500, 500, 0)
    learned = dict(JudgeRunItem.objects.filter(run=run).values_list("snapshot_id", "grade"))
    evidence = LearnedGrade.objects.filter(item__run=run)
    assert evidence.count() == 500
    assert all(row.impressions >= grader.min_impressions and 0 <= row.clicks <= row.impressions
               and row.click_model == "pbm" for row in evidence)
    # A shadow run writes no slot: the judge's account grades nothing.
    assert not FeedbackSlot.objects.filter(user=judge.user).exists()
    # The oracle: each of the people's grades on a result pairs with the learned grade.
    people = FeedbackSlot.objects.filter(evaluation=baseline, grade__isnull=False,
                                         user__username__in=history.GRADER_HABITS)
    pairs = [(grade, learned[snapshot_id])
             for snapshot_id, grade in people.values_list("snapshot_id", "grade")]
    assert len(pairs) == 1500
    kappa = _quadratic_kappa(pairs, [0, 1, 2, 3])
    # Learned from what shoppers clicked, the grades agree with the people's well, not
    # perfectly: clicks see a result's appeal, the graders the guidelines.
    assert 0.4 < kappa < 0.9
    exact = sum(person == learned for person, learned in pairs)
    client.force_login(User.objects.get(username="lead"))
    assert judge.name in client.get(reverse("judges:judge_list")).content.decode()
    page = client.get(reverse("judges:calibration", args=[judge.pk]))
    assert page.status_code == 200
    calibration = page.context["calibration"]
    assert (calibration.evaluation_id, calibration.pair_count) == (baseline.pk, 1500)
    assert calibration.kappa == pytest.approx(kappa, abs=1e-12)
    assert calibration.exact_match_rate == pytest.approx(exact / 1500)
    confusion = Counter(pairs)
    assert calibration.confusion == [[confusion[person, judged] for judged in range(4)]
                                     for person in range(4)]
    assert f'data-testid="kappa">{kappa:.3f}<' in page.content.decode()


@pytest.mark.slow_reason("seeds the whole demo history: three evaluations graded, a "
                        "simulated week of clicks and a clicks grader's shadow run")
def test_the_demo_history_shows_a_worse_model_disagreeing_graders_and_a_baseline(
        capsys, client):
    call_command("seed_demo")
    call_command("seed_demo_history")
    baseline = Evaluation.objects.get(name=history.BASELINE_NAME)
    candidate = Evaluation.objects.get(name=history.CANDIDATE_NAME)
    assert baseline.status == Evaluation.Status.FINISHED
    assert TeamBaseline.objects.get(team=baseline.team).evaluation_id == baseline.pk
    assert candidate.status == Evaluation.Status.ACTIVE

    # The candidate: 30 keywords graded by three people, 10 by grader1 alone, 10 untouched.
    graded_per_keyword = defaultdict(int)
    for keyword_position in FeedbackSlot.objects.filter(
            evaluation=candidate, grade__isnull=False).values_list(
            "keyword__position", flat=True):
        graded_per_keyword[keyword_position] += 1
    counts = sorted(graded_per_keyword.values())
    assert len(graded_per_keyword) == 40
    assert counts.count(max(counts)) >= 30
    assert not FeedbackSlot.objects.filter(evaluation=baseline, grade__isnull=True).exists()

    # The cheap-first model is worse on every metric, and some keywords got worse.
    before, after = _means(baseline), _means(candidate)
    assert set(before) == set(after) == {"precision", "ap", "ndcg"}
    assert all(after[code] < before[code] for code in before), (before, after)
    values = defaultdict(dict)
    for evaluation_id, text, value in KeywordMetricValue.objects.filter(
            metric__code="ndcg", metric__evaluation__in=[baseline, candidate]).values_list(
            "metric__evaluation_id", "keyword__text", "value"):
        values[text][evaluation_id] = value
    worse = [text for text, pair in values.items()
             if pair.get(candidate.pk) is not None and pair[candidate.pk] < pair[baseline.pk]]
    assert len(worse) >= 5

    # Graders disagree: Cohen's kappa between grader1 and grader3 on the baseline is below 1.
    grades = defaultdict(dict)
    for snapshot_id, username, grade in FeedbackSlot.objects.filter(
            evaluation=baseline).values_list("snapshot_id", "user__username", "grade"):
        grades[snapshot_id][username] = grade
    pairs = [(by["grader1"], by["grader3"]) for by in grades.values()]
    kappa = agreement.cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
    assert 0.3 < kappa < 1

    # Some of the grades that strayed from the rule are unsure, each with its note; a
    # grade that followed the rule never is.
    unsure = list(FeedbackSlot.objects.filter(evaluation=candidate, unsure=True)
                  .values_list("note", "grade", "snapshot__doc_id", "keyword__text"))
    assert 5 <= len(unsure) < FeedbackSlot.objects.filter(
        evaluation=candidate, grade__isnull=False).count() // 10
    products = DemoProduct.objects.in_bulk([doc for _, _, doc, _ in unsure], field_name="sku")
    for note, grade, doc_id, text in unsure:
        assert note.startswith("Not sure: ") and note.endswith("is that what was asked for?")
        assert grade != demo.relevance(text, products[doc_id])

    # The head-tuned model over the demo query set: finished (its verdict by the team's rule
    # comes after commit, which this test's transaction never reaches), and judged per
    # segment and weighted by traffic: head held, tail fell.
    tuned = Evaluation.objects.get(name=history.TAIL_RUN_NAME)
    assert tuned.status == Evaluation.Status.FINISHED
    segment_verdict = RegressionVerdict.objects.get(evaluation=tuned, source="command")
    assert (segment_verdict.rule["segments"], segment_verdict.rule["weighted"]) == (
        ["head", "tail"], True)
    assert segment_verdict.reasons[0] == (
        "Regressed: 3 of 3 metrics got worse overall and on tail; every metric held on head.")
    ndcg = next(m for m in segment_verdict.metrics if m["code"] == "ndcg")
    rows = {(row["segment"], row["weighted"]): row for row in ndcg["segments"]}
    # Every head result is BM25's, graded alike: not one value moved.
    assert (rows["head", False]["mean_delta"], rows["head", True]["mean_delta"]) == (0.0, 0.0)
    assert rows["head", False]["verdict"] == rows["head", True]["verdict"] == "no_change"
    assert rows["tail", False]["verdict"] == "regressed"
    assert rows["tail", False]["mean_delta"] < -0.05
    assert rows["tail", False]["shared_count"] == 28
    assert any(reason.startswith("nDCG@10 held on head (+0.000; weighted by traffic +0.000) "
                                 "but fell ") and " on tail (95 % CI " in reason
               for reason in segment_verdict.reasons)

    _check_the_clicks_grader(client, baseline)

    # Safe to run twice: nothing is graded again or added.
    graded = FeedbackSlot.objects.filter(grade__isnull=False).count()
    learned = LearnedGrade.objects.count()
    call_command("seed_demo_history")
    assert FeedbackSlot.objects.filter(grade__isnull=False).count() == graded
    assert (Judge.objects.filter(provider="clicks").count(), JudgeRun.objects.count(),
            LearnedGrade.objects.count()) == (1, 1, learned)
    assert Evaluation.objects.filter(name=history.CANDIDATE_NAME).count() == 1
    assert RegressionVerdict.objects.filter(evaluation=tuned, source="command").count() == 1
    out = capsys.readouterr().out
    assert "Demo history:" in out
    assert ("Clicks grader: 'Demo: learned from clicks (PBM)' learned 500 grades from that "
            "log in a shadow run on 'Demo baseline: BM25'") in out
    assert ("Per segment, 'Demo candidate: tuned on the head' against the baseline: Regressed: "
            "3 of 3 metrics got worse overall and on tail; every metric held on head.") in out
