"""bench/significance.py: paired bootstrap intervals of a lead over a baseline."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def significance(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(REPO))  # bench/ is a folder of the repository
    return importlib.import_module("bench.significance")


def _rows(pairs: list[tuple[int | None, int | None]]) -> list[dict[str, Any]]:
    return [{"doc-index": {"rank": a, "budget_hit": a == 1},
             "bm25s": {"rank": b, "budget_hit": b == 1}} for a, b in pairs]


def test_a_lead_on_every_question_has_an_interval_above_zero(significance: ModuleType) -> None:
    got = significance.lead(_rows([(1, 2)] * 30))
    m = got["mrr10"]
    assert (m["diff"], m["low"], m["high"]) == (0.5, 0.5, 0.5)
    assert (m["wins"], m["losses"], m["ties"]) == (30, 0, 0)
    assert got["budget_hit"]["low"] == 1.0


def test_a_lead_carried_by_one_question_holds_zero(significance: ModuleType) -> None:
    rows = _rows([(1, None)] + [(3, 3)] * 19)
    m = significance.paired(rows, "doc-index", "bm25s")
    assert m["diff"] == 0.05 and m["low"] == 0.0 < m["high"]
    assert (m["wins"], m["losses"], m["ties"]) == (1, 0, 19)


def test_the_same_rows_give_the_same_interval(significance: ModuleType) -> None:
    rows = _rows([(1, 2), (None, 1), (2, 5), (4, None), (1, 1)] * 5)
    assert significance.lead(rows) == significance.lead(list(rows))
    assert significance.paired([], "doc-index", "bm25s")["n"] == 0
