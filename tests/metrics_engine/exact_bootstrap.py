"""The percentile bootstrap interval worked out exactly, as an oracle for the seeded one.

The mean of n draws with replacement from n values takes few distinct values when the
values repeat; enumerating them with exact fractions gives the bootstrap distribution
itself. Where its cumulative share crosses 2.5 % and 97.5 % well inside an atom, any
10,000 resamples put their percentile on that atom too.
"""

from collections import defaultdict
from fractions import Fraction


def bootstrap_interval_atoms(values: list[Fraction], confidence: Fraction = Fraction(95, 100)
                             ) -> tuple[Fraction, Fraction]:
    """(lower, upper): the atoms of the exact bootstrap distribution of the mean where its
    cumulative share first reaches (1 - confidence) / 2 and (1 + confidence) / 2."""
    n = len(values)
    sums: dict[Fraction, Fraction] = {Fraction(0): Fraction(1)}
    for _ in range(n):
        grown: dict[Fraction, Fraction] = defaultdict(Fraction)
        for total, share in sums.items():
            for value in values:
                grown[total + value] += share / n
        sums = grown
    tail = (1 - confidence) / 2
    cumulative, atoms = Fraction(0), []
    for total in sorted(sums):
        cumulative += sums[total]
        for level in (tail, 1 - tail)[len(atoms):]:
            if cumulative >= level:
                atoms.append(total / n)
    return atoms[0], atoms[1]
