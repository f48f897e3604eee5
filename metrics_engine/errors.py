"""The one exception type of the metric engine."""


class MetricInputError(ValueError):
    """Invalid input to the metric engine.

    ``field`` names the offending input field (``"grades"``, ``"k"``, ``"params.gain"``,
    ``"transformers.graded->binary"``, ...); the message starts with that name, so callers
    can show it as is or map it to a form field.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")
