"""How many graders a result gets (Evaluation.strategy, Schedule.strategy)."""

# How many graders a result gets: 1, 3, or ADAPTIVE_STRATEGY ("1 → 3"): one
# slot per result first, a second and third only where it matters
# (judgments.adaptive.slots_open_where_it_matters).
ADAPTIVE_STRATEGY = 13
STRATEGY_CHOICES = [(1, "1 grader"), (3, "3 graders"),
                    (ADAPTIVE_STRATEGY, "1 grader, up to 3 where it matters")]
STRATEGY_VALUES = tuple(value for value, _ in STRATEGY_CHOICES)


def strategy_slot_counts(strategy: int) -> tuple[int, int]:
    """(slots each result gets when fetched, slots it may ever have) under `strategy`."""
    return (1, 3) if strategy == ADAPTIVE_STRATEGY else (strategy, strategy)


def strategy_text(strategy: int) -> str:
    """How a page says the strategy, as a whole phrase ("3 graders per result")."""
    if strategy == ADAPTIVE_STRATEGY:
        return "1 grader per result, up to 3 where it matters"
    return f"{strategy} grader{'s' if strategy != 1 else ''} per result"
