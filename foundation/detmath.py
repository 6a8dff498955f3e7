"""Floating-point helpers that give the same last bit on every machine.

Only IEEE-754 basic operations (correctly rounded everywhere) are used: no platform libm
call whose result could differ between C libraries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

_LN2 = 0.6931471805599453
_SQRT_HALF = 0.7071067811865476


def ln(x: float) -> float:
    """Natural logarithm of a positive finite float, from frexp and an atanh series."""
    if not x > 0.0:
        raise ValueError("ln of a non-positive number")
    m, e = math.frexp(x)  # exact: x = m * 2**e, 0.5 <= m < 1
    if m < _SQRT_HALF:
        m *= 2.0
        e -= 1
    s = (m - 1.0) / (m + 1.0)  # |s| <= 0.1716
    s2 = s * s
    term = s
    total = 0.0
    for k in range(1, 26, 2):
        total += term / k
        term *= s2
    return 2.0 * total + e * _LN2


def ordered_sum(values: Iterable[float]) -> float:
    """Left-to-right float sum. (The built-in ``sum`` compensates rounding since Python
    3.12, so its last bit depends on the Python version.)"""
    total = 0.0
    for v in values:
        total += v
    return total
