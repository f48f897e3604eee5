"""Exact running sums of floats, so a mean kept up to date value by value is the float
`mean_over_keywords` gives over all the values, bit for bit.

Every finite double is an integer multiple of 2**-1074 (the smallest subnormal), so a sum
of doubles scaled by 2**1074 is an exact Python int whatever the order of the additions
and removals. `math.fsum` is correctly rounded, hence equal to that int divided by 2**1074
with one rounding (Python's int / int is correctly rounded too): the mean over n values
is `sum_to_float(total) / n`, the formula `mean_over_keywords` uses (`fsum(values) / n`).
"""

from collections.abc import Iterable

import numpy as np

SCALE_BITS = 1074
_SCALE = 1 << SCALE_BITS


def exact_units(value: float) -> int:
    """`value` times 2**1074, exactly. Raises OverflowError/ValueError for inf/NaN."""
    numerator, denominator = value.as_integer_ratio()
    # The denominator is a power of two no larger than 2**1074.
    return numerator * (_SCALE // denominator)


# Mantissas are summed in int64 as two halves of at most 27 bits, so a group of up to
# 2**36 values cannot overflow.
_HALF = 27


def exact_total(values: Iterable[float] | np.ndarray) -> int:
    """The exact sum of `values`, in units of 2**-1074 (the sum of their exact_units).

    With numpy: each value is an integer mantissa (53 bits) times a power of two; the
    mantissas are summed exactly per power and the few per-power sums shifted into one
    int. Ten times faster than exact_units value by value, for a sum rebuilt from every
    stored value of a metric.
    """
    array = np.asarray(values if isinstance(values, np.ndarray) else list(values),
                       dtype=np.float64)
    if array.size == 0:
        return 0
    if not np.isfinite(array).all():
        raise ValueError("an exact sum needs finite values")
    fraction, exponent = np.frexp(array)
    mantissa = np.ldexp(fraction, 53).astype(np.int64)  # exact: 53 significant bits
    shift = exponent.astype(np.int64) + (SCALE_BITS - 53)
    order = np.argsort(shift, kind="stable")
    shift, mantissa = shift[order], mantissa[order]
    starts = np.flatnonzero(np.r_[True, shift[1:] != shift[:-1]])
    high = np.add.reduceat(mantissa >> _HALF, starts)
    low = np.add.reduceat(mantissa & ((1 << _HALF) - 1), starts)
    total = 0
    for power, high_sum, low_sum in zip(shift[starts].tolist(), high.tolist(), low.tolist(),
                                        strict=True):
        group = (high_sum << _HALF) + low_sum
        # A subnormal's mantissa ends in zeros: shifting them out is exact.
        total += group << power if power >= 0 else group >> -power
    return total


def sum_to_float(total: int) -> float:
    """The correctly rounded float of an exact total: math.fsum of the values summed."""
    return total / _SCALE


def mean_from_total(total: int, count: int) -> float | None:
    """The mean `mean_over_keywords` gives over `count` values summing to `total`."""
    return sum_to_float(total) / count if count else None


def total_encode(total: int) -> str:
    """A total as text (hexadecimal: linear-time both ways, exact on every database)."""
    return format(total, "x")


def total_decode(text: str) -> int:
    return int(text, 16)
