"""Every worked case of docs/METRICS.md through the Python API (not the conformance command)."""

import json
import math
from pathlib import Path
from typing import Any

import pytest

from metrics_engine import (
    MetricInputError,
    evaluate_keyword,
    evaluate_keywords,
    mean_over_keywords,
    rbo,
)
from metrics_engine.weighted import (
    DEFAULT_CUTS,
    traffic_segments,
    validate_cuts,
    validate_weights,
    weighted_mean,
)


def evaluate_with_api(case: dict[str, Any]) -> float | list[str] | None:
    if "segments" in case:
        weights = case["weights"]
        return traffic_segments(validate_weights(weights, len(weights)),
                                validate_cuts(case.get("cuts", list(DEFAULT_CUTS))))
    if case["metric"] == "rbo":
        return rbo(case["a"], case["b"], k=case["k"], p=case.get("p", 0.9))
    options = {
        "k": case["k"], "scale": case["scale"],
        "params": case.get("params"), "transformers": case.get("transformers"),
    }
    if "keywords" in case:
        values = evaluate_keywords(
            case["metric"],
            [[entry["grades"] for entry in results] for results in case["keywords"]],
            doc_ids=[[entry["doc"] for entry in results] for results in case["keywords"]],
            **options,
        )
        if "weights" in case:
            return weighted_mean(values, validate_weights(case["weights"], len(values)))
        return mean_over_keywords(values)[0]
    return evaluate_keyword(
        case["metric"],
        [entry["grades"] for entry in case["results"]],
        doc_ids=[entry["doc"] for entry in case["results"]],
        pool=[(entry["doc"], entry["grades"]) for entry in case.get("pool", [])],
        **options,
    )


CASES = [
    json.loads(line)
    for line in (Path(__file__).resolve().parent / "cases" / "public.jsonl")
    .read_text(encoding="utf-8").splitlines() if line.strip()
]


def test_the_repo_carries_all_88_public_cases():
    assert [case["id"] for case in CASES][-3:] == ["s02", "s03", "s04"]
    assert len(CASES) == 88


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_public_case_through_the_python_api(case):
    expected = case["expect"]
    if expected.get("error"):
        with pytest.raises(MetricInputError) as raised:
            evaluate_with_api(case)
        assert str(raised.value).startswith(raised.value.field + ": "), case["why"]
        return
    value = evaluate_with_api(case)
    if "segments" in expected:
        assert value == expected["segments"], case["why"]
    elif expected["value"] is None:
        assert value is None, case["why"]
    else:
        assert value is not None and not math.isnan(value), case["why"]
        assert value == pytest.approx(expected["value"], abs=1e-9), case["why"]
