"""Shared inputs of the metric-engine tests (no Django needed: run with -p no:django too)."""

import json
import os
from pathlib import Path
from typing import Any

import pytest

# ranx's kernels are Python functions under numba's decorator. The cross-check feeds them
# 60 keywords, which they compute as plain Python in well under a second, the same values;
# compiling them cost 61 s of CPU in every fresh checkout (CI's) and ~6 s a test process
# after. Set before ranx (and so numba) is first imported: only test_crosscheck imports it.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

# The worked cases of docs/METRICS.md, kept in the repo so a clone stands alone.
PUBLIC_CASES = Path(__file__).resolve().parent / "cases" / "public.jsonl"


def load_public_cases() -> list[dict[str, Any]]:
    """Every line of the worked cases; a missing file fails the run, never skips."""
    if not PUBLIC_CASES.is_file():
        raise FileNotFoundError(f"public metric cases not found at {PUBLIC_CASES.resolve()}")
    lines = PUBLIC_CASES.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="session")
def public_cases() -> list[dict[str, Any]]:
    return load_public_cases()
