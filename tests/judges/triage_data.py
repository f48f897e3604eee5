"""Evaluations where a judge and people disagree, for the triage tests. The impacts are
worked out beside each builder."""

from dataclasses import dataclass

from evaluations.models import Evaluation
from judges.models import Judge
from searchtweak.models import Team, User
from tests.judges.calibration_data import give, make_judge
from tests.metrics.builders import build_evaluation


@dataclass
class TriageExample:
    evaluation: Evaluation
    judge: Judge


def binary_example(team: Team, person: User) -> TriageExample:
    """Binary scale, three slots a result, P@3; keyword "shoes" with results a, b, c:

        1: 1 (person)     2: 1 (judge), 0 (person)     3: 0 (person)

    Position 2 answered the judge's way: [1, 1, 0], P@3 = 2/3; the people's way:
    [1, 0, 0], P@3 = 1/3. Impact 1/3."""
    evaluation = build_evaluation(team=team, scale="binary", strategy=3,
                                  keywords={"shoes": ["a", "b", "c"]},
                                  metrics=[("precision", 3, {})])
    judge = make_judge(team, "Binary judge")
    give(evaluation, "shoes", 1, 0, person, 1)
    give(evaluation, "shoes", 2, 0, judge.user, 1)
    give(evaluation, "shoes", 2, 1, person, 0)
    give(evaluation, "shoes", 3, 0, person, 0)
    return TriageExample(evaluation, judge)


def graded_example(team: Team, first: User, second: User) -> TriageExample:
    """Graded scale (0..3), three slots a result; first metric CG@3 (then P@3, not read).

        shoes: 1: 2 (first)  2: 3 (judge) | 0 (first)  3: 1 (first)  4: 0 (judge) | 1 (first)
        hats:  1: 1 (judge) | 2 (first), 3 (second)   2: 2 (judge) | 2 (first)   3: -
        socks: 1: 0 (first), 3 (second)                2: 3 (judge)

    Disagreements and impacts (CG@3 sums the results' mean grades):
    shoes 2: 3 vs 0, the others as graded: 2 + 3 + 1 = 6 vs 2 + 0 + 1 = 3, impact 3;
    hats 1: 1 vs mean(2, 3) = 2.5 -> 1 + 2 = 3 vs 2.5 + 2 = 4.5, impact 1.5;
    shoes 4: beyond k = 3, impact 0.
    Not listed: hats 2 (they agree), socks 1 (people only), socks 2 (the judge only).
    """
    evaluation = build_evaluation(
        team=team, scale="graded", strategy=3,
        keywords={"shoes": ["s1", "s2", "s3", "s4"], "hats": ["h1", "h2", "h3"],
                  "socks": ["k1", "k2"]},
        metrics=[("cg", 3, {}), ("precision", 3, {})])
    judge = make_judge(team, "Graded judge")
    for text, position, index, user, grade in [
        ("shoes", 1, 0, first, 2), ("shoes", 2, 0, judge.user, 3), ("shoes", 2, 1, first, 0),
        ("shoes", 3, 0, first, 1), ("shoes", 4, 0, judge.user, 0), ("shoes", 4, 1, first, 1),
        ("hats", 1, 0, judge.user, 1), ("hats", 1, 1, first, 2), ("hats", 1, 2, second, 3),
        ("hats", 2, 0, judge.user, 2), ("hats", 2, 1, first, 2),
        ("socks", 1, 0, first, 0), ("socks", 1, 1, second, 3), ("socks", 2, 0, judge.user, 3),
    ]:
        give(evaluation, text, position, index, user, grade)
    return TriageExample(evaluation, judge)
