"""The Hypothesis profiles: CI runs each property test at the depth it names, the inner
loop at a tenth of it, and no module can use Hypothesis without the profile loaded."""

import re
from pathlib import Path

import pytest

from tests import property_depth

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize(("profile", "ci_depth", "expected"), [
    ("ci", 500, 500), ("ci", 25, 25), ("ci", 3, 3),
    ("dev", 500, 50), ("dev", 25, 5), ("dev", 59, 5), ("dev", 60, 6), ("dev", 3, 3),
    ("", 400, 40),
])
def test_examples_are_the_named_depth_in_ci_and_a_tenth_in_the_loop(
        monkeypatch, profile, ci_depth, expected):
    monkeypatch.setenv(property_depth.PROFILE_ENV, profile)
    assert property_depth.examples(ci_depth) == expected


@pytest.mark.parametrize("profile", ["ci", "dev"])
def test_no_profile_times_an_example_or_the_drawing_of_its_inputs(profile):
    from hypothesis import HealthCheck, settings

    chosen = settings.get_profile(profile)
    assert chosen.deadline is None
    assert HealthCheck.too_slow in chosen.suppress_health_check


def test_an_unknown_profile_is_refused_not_taken_for_dev(monkeypatch):
    monkeypatch.setenv(property_depth.PROFILE_ENV, "deep")
    with pytest.raises(ValueError, match="HYPOTHESIS_PROFILE='deep'"):
        property_depth.examples(100)


def test_every_module_that_uses_hypothesis_loads_the_profile_and_names_its_depth():
    # A module that imports Hypothesis without tests.property_depth would run its
    # properties at Hypothesis's defaults in CI, whatever the profile says; a bare
    # max_examples=N would override the profile in the loop.
    unprofiled, bare = [], []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text()
        if path.name == "property_depth.py" or not re.search(
                r"^(from|import) hypothesis", text, re.MULTILINE):
            continue
        name = str(path.relative_to(TESTS))
        if "from tests.property_depth import" not in text:
            unprofiled.append(name)
        bare += [f"{name}: {match}" for match in re.findall(r"max_examples=\d+", text)]
    assert unprofiled == []
    assert bare == []
