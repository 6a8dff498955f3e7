"""Medians with their spread: every figure of the report is one of these."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated quantile of an already sorted, non-empty list."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


@dataclass(frozen=True)
class Summary:
    """Median, quartiles, extremes and count of repeated measurements (one unit)."""

    median: float
    p25: float
    p75: float
    p90: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Summary:
        data = sorted(float(v) for v in values)
        if not data:
            raise ValueError("no measurements")
        return cls(
            median=statistics.median(data),
            p25=quantile(data, 0.25),
            p75=quantile(data, 0.75),
            p90=quantile(data, 0.90),
            min=data[0],
            max=data[-1],
            n=len(data),
        )

    def scaled(self, factor: float) -> Summary:
        return Summary(self.median * factor, self.p25 * factor, self.p75 * factor,
                       self.p90 * factor, self.min * factor, self.max * factor, self.n)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Summary:
        return cls(**{k: data[k] for k in ("median", "p25", "p75", "p90", "min", "max", "n")})
