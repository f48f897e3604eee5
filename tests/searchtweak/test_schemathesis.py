"""The OpenAPI schema against the live server: schemathesis generates requests for every
operation (valid and invalid ones) with a seeded team and token, and checks that nothing
answers 5xx and every response matches the schema."""

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from evaluations.models import Evaluation
from searchtweak.models import Role
from searchtweak.services import api_token_create
from tests.conftest import import_or_skip
from tests.evaluations.factories import EndpointFactory, EvaluationMetricFactory, SearchModelFactory
from tests.judgments.builders import evaluation_with_slots
from tests.property_depth import examples
from tests.searchtweak.factories import TeamFactory, member

schemathesis = import_or_skip("schemathesis", reason="schemathesis is in the dev extra")
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.generation.modes import GenerationMode  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
)

# The work is bounded by the example count, not by a clock: how long it takes depends on
# the machine, and a wall-clock budget failed on busy ones (timings belong in bench/).
EXAMPLES = examples(25)
# Deletions run last, so the seeded objects live while the other operations are explored.
LAST = ("DELETE",)
# The operations are dealt to this many tests, so xdist runs them side by side: in one
# test, the whole API at CI depth took 328 s on one core while the other idled.
SHARDS = 4
BEYOND_64_BITS = 2**70


@pytest.fixture
def seeded(live_server, settings):
    # A webhook the fuzzer creates and tests is sent inside its request (eager tasks):
    # its retries must fit the call's timeout.
    settings.WEBHOOK_RETRY_BACKOFF_MS = 1
    settings.WEBHOOK_TIMEOUT_SECONDS = 1
    team = TeamFactory(name="Fuzz")
    owner = member(team, Role.OWNER, "fuzz-owner")
    member(team, Role.GRADER, "fuzz-grader")
    endpoint = EndpointFactory(team=team, url=f"{live_server.url}/demo/search",
                               timeout_seconds=2.0)
    model = SearchModelFactory(endpoint=endpoint, team=team)
    active = evaluation_with_slots(team, keywords=2, positions=2, strategy=1)
    EvaluationMetricFactory(evaluation=active, code="ndcg", k=2)
    pending = Evaluation.objects.create(team=team, model=model, name="pending", scale="graded",
                                        strategy=1)
    _, key = api_token_create(user=owner, name="fuzz")
    return {"key": key, "ids": [team.pk, endpoint.pk, model.pk, active.pk, pending.pk]}


def _beyond_64_bits(value, sign: int):
    """`value` with every integer in it (not booleans) replaced by one beyond 64 bits."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return sign * BEYOND_64_BITS
    if isinstance(value, list):
        return [_beyond_64_bits(item, sign) for item in value]
    if isinstance(value, dict):
        return {key: _beyond_64_bits(item, sign) for key, item in value.items()}
    return value


def _explore(operation, mode, base_url: str, headers: dict) -> None:
    strategy = operation.as_strategy(generation_mode=mode, headers=headers)
    # Invalid input also means integers no column holds: in the negative cases, a third
    # keep what was generated and the others have every integer of the body and query
    # replaced by one beyond 64 bits, of either sign (searchtweak.integers bounds them).
    signs = st.sampled_from([0, 1, -1]) if mode == GenerationMode.NEGATIVE else st.just(0)

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=strategy, sign=signs)
    def run(case, sign):
        if sign:
            if isinstance(case.body, dict | list):
                case.body = _beyond_64_bits(case.body, sign)
            if case.query:
                case.query = _beyond_64_bits(case.query, sign)
        response = case.call(base_url=base_url, headers=headers, timeout=15)
        case.validate_response(response, checks=[
            not_a_server_error, response_schema_conformance, content_type_conformance])

    run()


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(1200)  # a hang guard only; the whole API at CI depth took 328 s
@pytest.mark.slow_reason("fuzzes a quarter of the API's operations over HTTP, valid "
                        "and invalid (depth: tests/property_depth.py)")
@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_server_errors_and_no_schema_violations(live_server, seeded, shard):
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/")
    headers = {"Authorization": f"Token {seeded['key']}"}
    operations = sorted(
        (result.ok() for result in schema.get_all_operations()),
        key=lambda op: (op.method.upper() in LAST, op.path, op.method),
    )
    assert len(operations) >= 30
    failures: list[str] = []
    # Each shard keeps the order (its deletions last) over every SHARDS-th operation.
    for operation in operations[shard::SHARDS]:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _explore(operation, mode, live_server.url, headers)
            except Unsatisfiable:
                continue
            except Exception as error:  # collect every operation's failure, then report
                failures.append(f"{operation.label} ({mode}): {error}")
    assert not failures, "\n\n".join(failures)
