"""The one token-budget check, for every door: command-line text, JSON numbers, ints.

A budget is an integer in [0, MAX_BUDGET]. On a command line (``doc-index resolve
--budget``, ``context resolve --budget``) it is an optional ``-`` and 1 to 18 ASCII
digits, nothing else (no ``+``, ``_``, blanks or other digits); in MCP a JSON number
with no fractional part (JSON Schema ``integer``: ``4000.0`` is 4000). Anything else is
``invalid_budget``.
"""

from __future__ import annotations

import math
import re

from ..foundation.errors import BudgetError

MAX_BUDGET = 10_000_000
_INTEGER = re.compile(r"-?[0-9]{1,18}", re.ASCII)


def check_budget(budget: object) -> int:
    """``budget`` as an int in [0, MAX_BUDGET]; invalid_budget otherwise (a bool is no int)."""
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise BudgetError(detail="budget must be an integer")
    if not 0 <= budget <= MAX_BUDGET:
        raise BudgetError(detail=f"budget must be in [0, {MAX_BUDGET}]")
    return int(budget)


def parse_budget(text: str) -> int:
    """A command-line budget: the checked int, or invalid_budget."""
    if not _INTEGER.fullmatch(text):
        raise BudgetError(detail="budget must be an integer")
    return check_budget(int(text))


def budget_from_json(value: object) -> int:
    """An MCP ``budget`` argument (``4000`` or ``4000.0``): the checked int, or
    invalid_budget."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return check_budget(value)
