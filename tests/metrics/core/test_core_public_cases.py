"""Every shared worked case through the Python API (not the conformance command)."""

import math
from typing import Any

import pytest

from metrics.core import (
    MetricInputError,
    evaluate_keyword,
    evaluate_keywords,
    mean_over_keywords,
    rbo,
)


def evaluate_with_api(case: dict[str, Any]) -> float | None:
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
        return mean_over_keywords(values)[0]
    return evaluate_keyword(
        case["metric"],
        [entry["grades"] for entry in case["results"]],
        doc_ids=[entry["doc"] for entry in case["results"]],
        pool=[(entry["doc"], entry["grades"]) for entry in case.get("pool", [])],
        **options,
    )


def test_every_public_case_through_the_python_api(public_cases):
    assert len(public_cases) == 60
    for case in public_cases:
        expected = case["expect"]
        if expected.get("error"):
            with pytest.raises(MetricInputError) as raised:
                evaluate_with_api(case)
            assert str(raised.value).startswith(raised.value.field + ": "), case["why"]
            continue
        value = evaluate_with_api(case)
        if expected["value"] is None:
            assert value is None, case["why"]
        else:
            assert value is not None and not math.isnan(value), case["why"]
            assert value == pytest.approx(expected["value"], abs=1e-9), case["why"]
