"""How sure a lead is: paired bootstrap intervals of doc-index minus a baseline.

A question set of 20 or 50 questions moves by 0.02-0.05 MRR when one question changes
rank, so a lead of a few hundredths can be one question. Each interval resamples the
*questions* (with replacement, the same draw for both systems, so the comparison stays
paired) and reads the 2.5th and 97.5th percentiles of the difference of the means.
Beside it, the per-question count of wins, losses and ties says whether a lead is broad
or carried by a few questions.

Deterministic: a seeded ``random.Random`` and integer percentiles, so the same rows give
the same report on any machine.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

RESAMPLES = 2000
SEED = 14

Row = dict[str, Any]


def reciprocal_rank(row: Row, system: str) -> float:
    rank = row[system]["rank"]
    return 1.0 / rank if rank else 0.0


def budget_hit(row: Row, system: str) -> float:
    return 1.0 if row[system]["budget_hit"] else 0.0


MEASURES: dict[str, Callable[[Row, str], float]] = {
    "mrr10": reciprocal_rank, "budget_hit": budget_hit}


def paired(rows: Sequence[Row], ours: str, base: str, measure: str = "mrr10",
           resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """The difference of the means of ``measure`` (ours - base) over ``rows``, its 95 %
    paired bootstrap interval, and per-question wins / losses / ties."""
    value = MEASURES[measure]
    diffs = [value(r, ours) - value(r, base) for r in rows]
    n = len(diffs)
    if not n:
        return {"n": 0, "diff": 0.0, "low": 0.0, "high": 0.0, "wins": 0, "losses": 0,
                "ties": 0}
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n
                   for _ in range(resamples))
    low, high = means[resamples * 25 // 1000], means[resamples * 975 // 1000 - 1]
    return {"n": n, "diff": round(sum(diffs) / n, 4), "low": round(low, 4),
            "high": round(high, 4), "wins": sum(1 for d in diffs if d > 0),
            "losses": sum(1 for d in diffs if d < 0), "ties": sum(1 for d in diffs if d == 0)}


def lead(rows: Sequence[Row], ours: str = "doc-index", base: str = "bm25s") -> dict[str, Any]:
    """MRR@10 and budget-hit leads of ``ours`` over ``base`` with their intervals."""
    return {measure: paired(rows, ours, base, measure) for measure in MEASURES}


def format_lead(name: str, got: dict[str, Any]) -> str:
    m, b = got["mrr10"], got["budget_hit"]
    return (f"{name:<16} n={m['n']:<3} MRR {m['diff']:+.3f} [{m['low']:+.3f}, {m['high']:+.3f}]"
            f" (wins {m['wins']}, losses {m['losses']}, ties {m['ties']})   budget-hit "
            f"{b['diff']:+.3f} [{b['low']:+.3f}, {b['high']:+.3f}]")
