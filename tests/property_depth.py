"""How deep the property and fuzz tests go: a Hypothesis profile, chosen by
HYPOTHESIS_PROFILE.

- `ci` (set by .ci/run): every test at the depth it names, derandomised, so a failure in CI
  reproduces on a laptop with the same command.
- `dev` (the default): a tenth of that depth, at least MIN_DEV_EXAMPLES, for the inner
  loop; random, so many quick runs explore more than one deep run (a failure prints the
  seed that reproduces it, and Hypothesis keeps it in .hypothesis/ to try first).

A test names its CI depth with `examples(n)` instead of a bare `max_examples=n`, which
would override the profile. Every test module that uses Hypothesis imports this one
(tests/test_property_depth.py checks), which loads the profile before the module's
`@settings` are made; the rest of the suite never pays for importing Hypothesis.
"""

import os

from hypothesis import HealthCheck, settings

PROFILE_ENV = "HYPOTHESIS_PROFILE"
DEV_FRACTION = 10
MIN_DEV_EXAMPLES = 5


def profile_name() -> str:
    name = os.environ.get(PROFILE_ENV, "dev") or "dev"
    if name not in ("dev", "ci"):
        raise ValueError(f"{PROFILE_ENV}={name!r}: expected 'dev' or 'ci'")
    return name


# Hypothesis's two timed checks, off in both profiles: an example's deadline (200 ms) and
# the health check that fails when drawing inputs is slow. A property test asserts the
# property, never a time (docs/dev/testing.md); on a loaded machine (xdist beside Chromium)
# a starved process took 1.3 s to draw six inputs and failed a property that held.
UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def load_profile() -> None:
    settings.register_profile("ci", derandomize=True, database=None, print_blob=True,
                              **UNTIMED)
    # A test that names no depth: Hypothesis's own 100 in CI, 10 here.
    settings.register_profile("dev", max_examples=10, **UNTIMED)
    settings.load_profile(profile_name())


def examples(ci_depth: int) -> int:
    """The example count for a test whose full (CI) depth is `ci_depth`."""
    if profile_name() == "ci":
        return ci_depth
    return min(ci_depth, max(MIN_DEV_EXAMPLES, ci_depth // DEV_FRACTION))


load_profile()
