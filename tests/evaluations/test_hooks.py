"""team_scale: the one way evaluations and metrics turn a team's scale code into a scale."""

import metrics_engine as core
from evaluations import hooks
from judgments.models import Scale


def test_a_builtin_code_is_the_core_scale_for_every_team(personas):
    assert hooks.team_scale(personas.team, "graded") is core.SCALES["graded"]
    assert hooks.team_scale(personas.other_team, "detail") is core.SCALES["detail"]


def test_a_team_scale_comes_from_the_registered_provider_and_only_for_its_team(personas):
    Scale.objects.create(team=personas.team, code="stars", name="Stars", lo=1, hi=5,
                         labels={str(g): {"label": str(g)} for g in range(1, 6)})
    assert hooks.team_scale(personas.team, "stars") == core.Scale("stars", 1, 5)
    assert hooks.team_scale(personas.other_team, "stars") is None
    assert hooks.team_scale(personas.team, "nope") is None


def test_without_judgments_the_builtin_provider_answers_from_the_core_scales(personas):
    previous = hooks.scale_provider()
    hooks.register_scale_provider(hooks._builtin_provider())
    try:
        provider = hooks.scale_provider()
        assert provider.choices(personas.team) == [
            ("binary", "Binary (0..1)"), ("graded", "Graded (0..3)"), ("detail", "Detail (1..10)")]
        assert provider.bounds(personas.team, "detail") == (1, 10)
        assert provider.bounds(personas.team, "stars") is None
        assert hooks.team_scale(personas.team, "stars") is None
    finally:
        hooks.register_scale_provider(previous)
