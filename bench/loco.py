"""Leave-one-corpus-out: the ranking's weights tuned on one corpus, scored on another.

Every numeric field of ``search.ranking.Params`` (read from the dataclass or NamedTuple,
so a field added later is tuned too; a tuple of numbers is tuned per component; booleans
and other values are left alone) is tuned on the training corpus's dev questions by a
deterministic coordinate search: for each coordinate in field order, each value
``default x m`` for ``m`` in ``Search.multipliers`` is tried from the current best point,
and a trial is kept only when it is strictly better on (MRR@10, then budget-hit@2000);
rounds repeat until one changes nothing or ``Search.rounds`` is reached. The tuned weights
are then scored on the other corpus's dev questions, next to the defaults, with the same
``rank`` and ``select`` the product runs (``params`` passed in, caches loaded once).

The search starts from the shipped defaults, and those (like the ranking's features) were
chosen looking at both dev corpora: the figures show how much retuning on one corpus moves
the other, not a score of a ranking designed without ever seeing it.

``run`` takes built corpora (``bench.quality.Corpus``: ``cache``, ``keys``, ``ids``) and
returns plain data for ``results.json``; ``bench/quality.py`` adds the BM25 figures.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BUDGET = 2000
PAIRS = (("flask-docs", "fastapi-docs"), ("fastapi-docs", "flask-docs"))

# A coordinate: a field name, and the component index when the field is a tuple.
Coordinate = tuple[str, int | None]


@dataclass(frozen=True)
class Search:
    multipliers: tuple[float, ...]
    rounds: int


FULL = Search(multipliers=(0.0, 0.5, 0.75, 1.25, 1.5, 2.0), rounds=3)
QUICK = Search(multipliers=(0.5, 2.0), rounds=1)  # keeps the code path alive in CI


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _field_names(params: Any) -> list[str]:
    if dataclasses.is_dataclass(params):
        return [f.name for f in dataclasses.fields(params)]
    return list(params._fields)  # a NamedTuple


def coordinates(params: Any) -> list[Coordinate]:
    """Every tunable number of ``params``, in field order."""
    out: list[Coordinate] = []
    for name in _field_names(params):
        value = getattr(params, name)
        if _numeric(value):
            out.append((name, None))
        elif isinstance(value, tuple) and value and all(_numeric(v) for v in value):
            out.extend((name, i) for i in range(len(value)))
    return out


def get(params: Any, coord: Coordinate) -> float:
    name, i = coord
    value = getattr(params, name)
    return value if i is None else value[i]


def with_value(params: Any, coord: Coordinate, value: float) -> Any:
    name, i = coord
    if i is not None:
        parts = list(getattr(params, name))
        parts[i] = value
        value = tuple(parts)  # type: ignore[assignment]
    if dataclasses.is_dataclass(params):
        return dataclasses.replace(params, **{name: value})  # type: ignore[type-var]
    return params._replace(**{name: value})


def trial_values(default: float, multipliers: Sequence[float]) -> list[float]:
    """``default x m`` for each multiplier, ints kept ints, duplicates dropped."""
    out: list[float] = []
    for m in multipliers:
        value = round(default * m) if isinstance(default, int) else default * m
        if value not in out:
            out.append(value)
    return out


def _label(coord: Coordinate) -> str:
    name, i = coord
    return name if i is None else f"{name}[{i}]"


class Scorer:
    """MRR@10, hit@5 and budget-hit@2000 of one corpus's questions under given params."""

    def __init__(self, corpus: Any, questions: list[dict[str, Any]]) -> None:
        self.corpus = corpus
        self.queries = [q["query"] for q in questions]
        self.gold = [{(g["file"], " ".join(g["heading"].split())) for g in q["gold"]}
                     for q in questions]
        self.index = {sid: d for d, sid in enumerate(corpus.ids)}
        self.evaluations = 0

    def ranks(self, params: Any) -> list[int | None]:
        from doc_index.search.ranking import rank

        self.evaluations += 1
        keys = self.corpus.keys
        out: list[int | None] = []
        for query, gold in zip(self.queries, self.gold):
            order = [entry[2] for entry in rank(self.corpus.cache, query, params)[:10]]
            out.append(next((r for r, d in enumerate(order, 1) if keys[d] in gold), None))
        return out

    def budget_hits(self, params: Any) -> list[bool]:
        # The same packing as the dev rows' doc-index budget-hit: the real select.
        from doc_index.search.native_selection import select

        keys = self.corpus.keys
        out = []
        for query, gold in zip(self.queries, self.gold):
            docs = select(self.corpus.cache, query, BUDGET, params)["documents"]
            out.append(any(keys[self.index[doc["id"]]] in gold for doc in docs))
        return out

    def mrr(self, params: Any) -> float:
        return _mrr(self.ranks(params))

    def metrics(self, params: Any) -> dict[str, float]:
        ranks = self.ranks(params)
        hits = self.budget_hits(params)
        n = len(ranks) or 1
        return {"mrr10": round(_mrr(ranks), 4),
                "hit5": round(sum(1 for r in ranks if r and r <= 5) / n, 4),
                "budget_hit": round(sum(hits) / n, 4)}


def _mrr(ranks: list[int | None]) -> float:
    return sum(1.0 / r for r in ranks if r) / (len(ranks) or 1)


def tune(scorer: Scorer, base: Any, search: Search) -> tuple[Any, int]:
    """The coordinate search; returns the best params and the rounds run."""
    best = base
    best_mrr = scorer.mrr(best)
    best_bhit: float | None = None  # computed only when a trial ties on MRR
    rounds = 0
    for _ in range(search.rounds):
        rounds += 1
        changed = False
        for coord in coordinates(base):
            for value in trial_values(get(base, coord), search.multipliers):
                if value == get(best, coord):
                    continue
                trial = with_value(best, coord, value)
                mrr = scorer.mrr(trial)
                if mrr < best_mrr:
                    continue
                if best_bhit is None:
                    best_bhit = _share(scorer.budget_hits(best))
                bhit = _share(scorer.budget_hits(trial))
                if mrr > best_mrr or bhit > best_bhit:
                    best, best_mrr, best_bhit, changed = trial, mrr, bhit, True
        if not changed:
            break
    return best, rounds


def _share(flags: list[bool]) -> float:
    return sum(flags) / (len(flags) or 1)


def run(corpora: dict[str, Any], questions: list[dict[str, Any]],
        search: Search = FULL) -> dict[str, Any]:
    """Tune on each training corpus of ``PAIRS``, score on its test corpus."""
    from doc_index.search.ranking import PARAMS

    started = time.perf_counter()
    out: dict[str, Any] = {"multipliers": list(search.multipliers), "rounds": search.rounds,
                           "coordinates": [_label(c) for c in coordinates(PARAMS)],
                           "directions": {}}
    for train, test in PAIRS:
        if train not in corpora or test not in corpora:
            continue
        t0 = time.perf_counter()
        trainer = Scorer(corpora[train], [q for q in questions if q["corpus"] == train])
        tester = Scorer(corpora[test], [q for q in questions if q["corpus"] == test])
        tuned, rounds = tune(trainer, PARAMS, search)
        out["directions"][f"{train} -> {test}"] = {
            "train": train, "test": test,
            "n_train": len(trainer.queries), "n_test": len(tester.queries),
            "changed": {_label(c): {"default": get(PARAMS, c), "tuned": get(tuned, c)}
                        for c in coordinates(PARAMS) if get(tuned, c) != get(PARAMS, c)},
            "rounds_run": rounds, "evaluations": trainer.evaluations,
            "train_mrr10": {"default": round(trainer.mrr(PARAMS), 4),
                            "tuned": round(trainer.mrr(tuned), 4)},
            "test_default": tester.metrics(PARAMS),
            "test_tuned": tester.metrics(tuned),
            "seconds": round(time.perf_counter() - t0, 1),
        }
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out
