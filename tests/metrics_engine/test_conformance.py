"""`python -m metrics.conformance` against docs/METRICS.md's worked cases and malformed input."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "cases" / "public.jsonl"


def run_conformance(text: str) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess]:
    completed = subprocess.run(
        [sys.executable, "-m", "metrics.conformance"],
        input=text, capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
    )
    return [json.loads(line) for line in completed.stdout.splitlines()], completed


def assert_matches(case: dict[str, Any], output: dict[str, Any]) -> None:
    assert output["id"] == case["id"]
    expected = case["expect"]
    if expected.get("error"):
        assert set(output) == {"id", "error"}, (case["why"], output)
        assert output["error"], case["why"]
        if isinstance(expected["error"], str):  # the field the message must name first
            assert output["error"].startswith(expected["error"] + ":"), (case["why"], output)
    elif "segments" in expected:
        assert output == {"id": case["id"], "segments": expected["segments"]}, case["why"]
    else:
        fields = ("value", "lower", "upper") if case.get("bounds") else ("value",)
        assert set(output) == {"id", *fields}, (case["why"], output)
        for field in fields:
            if expected[field] is None:
                assert output[field] is None, (case["why"], field)
            else:
                assert output[field] == pytest.approx(expected[field], abs=1e-9), (
                    case["why"], field
                )


def test_it_answers_every_public_case_in_order(public_cases):
    text = CASES.read_text(encoding="utf-8")
    outputs, completed = run_conformance(text)
    assert completed.returncode == 0, completed.stderr
    assert [output.get("id") for output in outputs] == [case["id"] for case in public_cases]
    failing = []
    for case, output in zip(public_cases, outputs, strict=True):
        try:
            assert_matches(case, output)
        except AssertionError as error:
            failing.append(f"{case['id']}: {error}")
    assert not failing, "\n".join(failing)
    assert len(outputs) == 88


def test_it_names_the_field_in_each_public_error(public_cases):
    lines = "\n".join(json.dumps(case) for case in public_cases if "error" in case["expect"])
    outputs, _ = run_conformance(lines + "\n")
    assert [output["error"] for output in outputs] == [
        "grades: 4 is outside the graded scale 0..3",
        "metric: unknown metric code 'ndgc'",
        "k: must be an integer >= 1, not 0",
        "transformers.graded->binary: grade 2 is not mapped",
        "weights: item 1: -2 is not a non-negative integer",
        "weights: has 1 weights for 2 keywords",
        "weights: item 0: 1.5 is not a non-negative integer",
        "cuts: must be two integers a < b with 0 ≤ a < b ≤ 100",
    ]


def test_it_keeps_going_after_malformed_lines_and_exits_zero():
    text = "\n".join([
        '{"id": "broken", "metric": ',
        "[1, 2]",
        "",
        '{"id": 7, "metric": "cg", "k": 2, "scale": "graded", '
        '"results": [{"doc": "a", "grades": [3, 2]}, {"doc": "b", "grades": [1]}]}',
    ]) + "\n"
    outputs, completed = run_conformance(text)
    assert completed.returncode == 0
    assert [set(output) for output in outputs[:3]] == [{"id", "error"}] * 3
    assert outputs[0]["id"] == "broken"
    assert outputs[1]["id"] is None
    assert outputs[3] == {"id": 7, "value": 3.5}


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ({"metric": "cg", "k": 1, "scale": "graded", "results": [{"doc": "a", "grades": ["3"]}]},
         "grades: '3' is not an integer"),
        ({"metric": "cg", "k": 1, "scale": "graded", "results": [{"doc": "a", "grades": [1.5]}]},
         "grades: 1.5 is not an integer"),
        ({"metric": "cg", "k": 1, "scale": "graded", "results": [{"doc": "a", "grades": [True]}]},
         "grades: true is not an integer"),
        ({"metric": "cg", "k": 1, "scale": "stars", "results": []},
         "scale: unknown scale 'stars' (known: binary, graded, detail)"),
        ({"metric": "ndcg", "k": 1, "scale": "graded", "results": [], "params": {"ideal": "x"}},
         "params.ideal: 'x' is not one of local, pool, max"),
        ({"metric": "f_score", "k": 1, "scale": "binary", "results": [], "params": {"beta": 0}},
         "params.beta: must be > 0, not 0"),
        ({"metric": "rbo", "k": 3, "p": 1.0, "a": [], "b": []},
         "p: must be a number in (0, 1), not 1.0"),
        # Strict to the spec's codes: the names people type are for forms and the API.
        ({"metric": "map", "k": 3, "scale": "binary", "results": []},
         "metric: unknown metric code 'map'"),
        ({"metric": "ndcg@10", "k": 10, "scale": "graded", "results": []},
         "metric: unknown metric code 'ndcg@10'"),
        ({"metric": "recall", "k": 3, "scale": "binary", "keywords": [[]], "pool": []},
         "pool: not allowed with keywords"),
    ],
)
def test_it_reports_invalid_input_naming_the_field(case, error):
    outputs, _ = run_conformance(json.dumps({"id": "x", **case}) + "\n")
    assert outputs == [{"id": "x", "error": error}]


def test_it_prints_full_precision_floats_and_pools_duplicate_results():
    case = {
        "id": "dup", "metric": "recall", "k": 10, "scale": "binary",
        "results": [{"doc": "d1", "grades": [1]}, {"doc": "d1", "grades": [1]},
                    {"doc": "d2", "grades": [0]}],
        "pool": [{"doc": "x", "grades": [1]}, {"doc": "y", "grades": [1]}],
    }
    outputs, _ = run_conformance(json.dumps(case) + "\n")
    # Both copies of d1 count at their positions; d1 is one relevant pool document of 3.
    assert outputs == [{"id": "dup", "value": 2 / 3}]
    assert repr(2 / 3) == "0.6666666666666666"


def test_bounds_enumerate_completions_exactly():
    # P@2 binary, position 2 ungraded: completions give 1/2 (grade 0) and 2/2 (grade 1);
    # the value today counts judged positions only (1/1).
    case = {
        "id": "p2", "metric": "precision", "k": 2, "scale": "binary", "bounds": True,
        "results": [{"doc": "a", "grades": [1]}, {"doc": "b", "grades": [None]}],
    }
    outputs, _ = run_conformance(json.dumps(case) + "\n")
    assert outputs == [{"id": "p2", "value": 1.0, "lower": 0.5, "upper": 1.0}]


def test_bounds_false_or_absent_answers_the_value_alone():
    case = {"metric": "cg", "k": 1, "scale": "graded", "results": [{"doc": "a", "grades": [2]}]}
    outputs, _ = run_conformance(
        json.dumps({"id": "no", **case}) + "\n"
        + json.dumps({"id": "off", "bounds": False, **case}) + "\n"
    )
    assert outputs == [{"id": "no", "value": 2.0}, {"id": "off", "value": 2.0}]


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ({"metric": "cg", "k": 1, "scale": "graded", "bounds": "yes",
          "results": [{"doc": "a", "grades": [2]}]},
         "bounds: must be true or false"),
        ({"metric": "rbo", "k": 3, "a": ["x"], "b": ["x"], "bounds": True},
         "bounds: RBO compares rankings; it has no grades to bound"),
        ({"metric": "cg", "k": 7, "scale": "detail", "bounds": True,
          "results": [{"doc": f"d{n}", "grades": [None]} for n in range(7)]},
         "bounds: 7 ungraded slots on a scale of 10 grades are 10000000 completions, "
         "more than the 1048576 this command enumerates exactly"),
    ],
)
def test_it_refuses_bounds_it_cannot_compute_naming_the_field(case, error):
    outputs, _ = run_conformance(json.dumps({"id": "x", **case}) + "\n")
    assert outputs == [{"id": "x", "error": error}]
