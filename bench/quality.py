"""Retrieval quality of ``context.resolve`` on native caches, against two baselines.

Usage::

    .venv/bin/python bench/quality.py [CORPORA_DIR] [QUERIES] [--work DIR] [--details]

``CORPORA_DIR`` defaults to ``../shared/corpora`` next to the repository and ``QUERIES`` to
``CORPORA_DIR/queries-dev.jsonl``. Each corpus named by a question is built with the real
``IndexStore`` (a full build into a temporary root, or into ``--work``), then every question
is answered three ways over the same sections:

- ``doc-index``: the real resolve path, ``search.native_selection.select`` in-process (the
  ranking for MRR/hit@5 is ``search.ranking.rank``, which ``select`` fills the budget from); a
  few questions are also run through ``python -m doc_index.server.context_cli resolve`` as a
  subprocess to check that the CLI returns the same documents (skipped while that module is
  missing);
- ``bm25s``: plain BM25 (``bm25s`` defaults, English stopwords, Snowball stemmer) over
  each section's text; bench-only dependency;
- ``v0``: the Context Engine v0 formula, term_matches / total_words over
  whitespace-split lowercase words, ties by id.

Metrics, per corpus, per difficulty (``note`` starts with ``easy:`` or ``hard:``) and
overall: MRR@10, hit@5, and budget-hit@2000 (a gold section is among what a 2,000-token
budget selects). For doc-index that is what the real ``select`` returns: the whole answer
(metadata, provenance, selection object) is charged against the budget, and a document
that is an excerpt of a gold section counts (it carries the section's id). The baselines'
rankings are packed the same way (``search.native_selection.pack``: the whole answer charged,
excerpts, no stubs), so budget-hit compares rankings under one budget rule. (Until this
change they were packed greedily with their sections' text tokens only, a more generous
budget than doc-index got.)
A ranked section matches a gold entry when its file and its title equal the gold file and
heading after whitespace normalization.

Question sets: the dev questions (``QUERIES``), and the fresh sets kept as written in
``bench/questions/`` (see its README): ``fresh-1`` (20 questions on flask/fastapi, written
after the design), ``fresh-2`` (48 questions on click/httpx/sqlalchemy, written blind) and
``fresh-3`` (45 questions written blind on attrs/scrapy/starlette, the held-out set; its
corpora are in ``bench/corpora/``, the others' in ``CORPORA_DIR``).
Beside them, leave-one-corpus-out (:mod:`bench.loco`): every ranking weight tuned on
Flask's dev questions and scored on FastAPI's, and the reverse. ``targets()`` gives issue 14's
bars, each reported met or missed. ``--quick`` (the CI bench) skips fresh-2, whose
sqlalchemy build is the slow part, and fresh-3, and runs a one-round LOCO.

``run(corpora_dir, queries)`` returns everything as a dict for the benchmark report.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

try:
    from . import loco, significance
except ImportError:  # run as a script (python bench/quality.py): bench/ is on sys.path
    import loco  # type: ignore[no-redef]
    import significance  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = REPO.parent / "shared" / "corpora"
QUESTIONS = REPO / "bench" / "questions"
FRESH_SETS = {"fresh-1": QUESTIONS / "fresh-1.jsonl", "fresh-2": QUESTIONS / "fresh-2.jsonl",
              "fresh-3": QUESTIONS / "fresh-3.jsonl"}
# A set's corpora folder when it is not CORPORA_DIR: fresh-3's documentation ships with the
# repository (bench/corpora/SOURCES.md), so the held-out set runs wherever the bench does.
SET_CORPORA = {"fresh-3": REPO / "bench" / "corpora"}
QUICK_SETS = ("fresh-1",)
# Scored by the full bench, never used to choose a change (bench/ablation.py leaves it out).
HELD_OUT = ("fresh-3",)
BUDGET = 2000
SYSTEMS = ("doc-index", "bm25s", "v0")
CLI_CHECKS_PER_CORPUS = 3
# Issue 14's bars: absolute ones on the dev set, a lead over plain BM25 elsewhere.
DEV_MRR, DEV_BUDGET_HIT, DEV_HARD_MRR = 0.85, 0.95, 0.78
LEAD_OVER_BM25, FRESH_BUDGET_HIT = 0.10, 0.90

Ranker = Callable[[str], list[int]]


def _norm(text: str) -> str:
    return " ".join(text.split())


def load_queries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


# The name other bench scripts import; the questions themselves live in fresh-1.jsonl.
FRESH_QUESTIONS = load_queries(FRESH_SETS["fresh-1"])


def build_cache(root: Path, corpus_dir: Path, full: bool = True) -> Path:
    """A build of ``corpus_dir`` under ``root`` (full unless ``full`` is False); returns
    the cache directory."""
    from doc_index.sources.walk import scan_directory
    from doc_index.store.index_store import IndexStore

    store = IndexStore(root)
    key = f"local-{corpus_dir.name}"
    store.update_index(key, "local", corpus_dir.name, scan_directory(corpus_dir), full=full)
    return store.cache_dir(key)


class Corpus:
    """One built corpus: its cache, its sections' texts and the three rankers."""

    def __init__(self, cache_dir: Path) -> None:
        from doc_index.store.native_cache import load_native_cache

        self.cache_dir = cache_dir
        self.cache = load_native_cache(cache_dir)
        sections = self.cache.sections
        self.ids = [s["id"] for s in sections]
        self.tokens = [s["tokens"] for s in sections]
        self.keys = [(s["file"], _norm(s["title"])) for s in sections]
        self.key_set = set(self.keys)
        self.texts = [self.cache.section_text(d) for d in range(len(sections))]
        self._v0_words = [t.lower().split() for t in self.texts]
        self._bm25: Any = None

    # doc-index ----------------------------------------------------------------------
    def ours_rank(self, query: str) -> list[int]:
        from doc_index.search.ranking import rank

        return [entry[2] for entry in rank(self.cache, query)]

    def ours_budget(self, query: str) -> list[int]:
        """The sections ``select`` returns within BUDGET, whole or as an excerpt."""
        from doc_index.search.native_selection import select

        index = {sid: d for d, sid in enumerate(self.ids)}
        result = select(self.cache, query, BUDGET)
        return [index[doc["id"]] for doc in result["documents"]]

    # baselines ----------------------------------------------------------------------
    def packed(self, query: str, order: Sequence[int]) -> list[int]:
        """A baseline's ranking packed within BUDGET as doc-index packs its own (the whole
        answer charged, excerpts, no stubs): the sections it returns."""
        from doc_index.search.native_selection import pack
        from doc_index.search.ranking import concepts

        index = {sid: d for d, sid in enumerate(self.ids)}
        ranked = [(1.0 / (i + 1), self.ids[d], d) for i, d in enumerate(order)]
        result = pack(self.cache, query, BUDGET, concepts(query, self.cache), ranked)
        return [index[doc["id"]] for doc in result["documents"]]

    def v0_rank(self, query: str) -> list[int]:
        terms = query.lower().split()
        scored = []
        for d, words in enumerate(self._v0_words):
            if not words:
                score = 0.0
            else:
                matches = sum(terms.count(w) for w in words if w in terms)
                score = matches / len(words)
            scored.append((-score, self.ids[d], d))
        scored.sort()
        return [d for _, _, d in scored]

    def bm25_rank(self, query: str) -> list[int]:
        import bm25s
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        if self._bm25 is None:
            tokens = bm25s.tokenize(self.texts, stopwords="en", stemmer=stemmer,
                                    show_progress=False)
            self._bm25 = bm25s.BM25()
            self._bm25.index(tokens, show_progress=False)
            self._vocab = tokens.vocab
        q = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, return_ids=False,
                           show_progress=False)[0]
        q = [t for t in q if t in self._vocab]
        if not q:
            return []
        scores = self._bm25.get_scores(q)
        ranked = sorted((-float(s), self.ids[d], d) for d, s in enumerate(scores) if s > 0)
        return [d for _, _, d in ranked]


def _first_gold(order: Sequence[int], keys: Sequence[tuple[str, str]],
                gold: set[tuple[str, str]], limit: int) -> int | None:
    for rank, d in enumerate(order[:limit], 1):
        if keys[d] in gold:
            return rank
    return None


def _metrics(rows: list[dict[str, Any]], system: str) -> dict[str, float]:
    n = len(rows) or 1
    mrr = sum(1.0 / r[system]["rank"] for r in rows if r[system]["rank"]) / n
    hit5 = sum(1 for r in rows if r[system]["rank"] and r[system]["rank"] <= 5) / n
    bhit = sum(1 for r in rows if r[system]["budget_hit"]) / n
    return {"mrr10": round(mrr, 4), "hit5": round(hit5, 4), "budget_hit": round(bhit, 4)}


def _cli_check(corpus: Corpus, queries: list[str]) -> dict[str, Any]:
    if importlib.util.find_spec("doc_index.server.context_cli") is None:
        return {"status": "unavailable", "checked": 0, "equal": 0}
    equal = 0
    for query in queries:
        proc = subprocess.run(
            [sys.executable, "-m", "doc_index.server.context_cli", "resolve", "--cache",
             str(corpus.cache_dir), "--query", query, "--budget", str(BUDGET)],
            capture_output=True, check=False,
        )
        if proc.returncode != 0:
            continue
        cli_ids = [doc["id"] for doc in json.loads(proc.stdout)["documents"]]
        if cli_ids == [corpus.ids[d] for d in corpus.ours_budget(query)]:
            equal += 1
    status = "ok" if equal == len(queries) else "mismatch"
    return {"status": status, "checked": len(queries), "equal": equal}


def evaluate(corpora: dict[str, Corpus], questions: list[dict[str, Any]],
             cli: bool = True) -> dict[str, Any]:
    """Run every question on its corpus; per-question rows, grouped metrics, latency."""
    rows = []
    latency: dict[str, list[float]] = {name: [] for name in corpora}
    for q in questions:
        corpus = corpora[q["corpus"]]
        gold = {(g["file"], _norm(g["heading"])) for g in q["gold"]}
        row: dict[str, Any] = {
            "corpus": q["corpus"], "query": q["query"],
            "difficulty": "hard" if q.get("note", "").startswith("hard") else "easy",
            "gold_indexed": sum(1 for k in corpus.keys if k in gold),
            "gold_missing": [f"{f} :: {h}" for f, h in sorted(gold)
                             if (f, h) not in corpus.key_set],
        }
        for system in SYSTEMS:
            if system == "doc-index":
                order = corpus.ours_rank(q["query"])
                start = time.perf_counter()
                picked = corpus.ours_budget(q["query"])
                latency[q["corpus"]].append(time.perf_counter() - start)
            else:
                order = corpus.bm25_rank(q["query"]) if system == "bm25s" else \
                    corpus.v0_rank(q["query"])
                picked = corpus.packed(q["query"], order)
            row[system] = {
                "rank": _first_gold(order, corpus.keys, gold, 10),
                "budget_hit": any(corpus.keys[d] in gold for d in picked),
                "top": [corpus.ids[d] for d in order[:3]],
            }
        rows.append(row)
    groups: dict[str, list[dict[str, Any]]] = {"all": rows}
    for name in corpora:
        groups[name] = [r for r in rows if r["corpus"] == name]
    for level in ("easy", "hard"):
        groups[level] = [r for r in rows if r["difficulty"] == level]
        for name in corpora:
            groups[f"{name}/{level}"] = [r for r in groups[name] if r["difficulty"] == level]
    metrics = {
        g: {"n": len(rs), **{s: _metrics(rs, s) for s in SYSTEMS}} for g, rs in groups.items()
    }
    result: dict[str, Any] = {"metrics": metrics, "questions": rows, "latency_ms": {
        name: {"p50": round(statistics.median(v) * 1000, 3),
               "max": round(max(v) * 1000, 3)} for name, v in latency.items() if v
    }}
    if cli:
        result["cli_check"] = {
            name: _cli_check(c, [q["query"] for q in questions if q["corpus"] == name]
                             [:CLI_CHECKS_PER_CORPUS])
            for name, c in corpora.items()
        }
    return result


def run(corpora_dir: Path, queries: Path, work: Path | None = None, cli: bool = True,
        fresh: bool = True, loco_search: loco.Search | None = loco.FULL,
        quick: bool = False) -> dict[str, Any]:
    """Build every corpus a question set names, evaluate each set, run leave-one-corpus-out
    on the dev questions; metrics, details and the issue's targets, met or missed.

    ``fresh``: also the sets of ``FRESH_SETS`` (only ``QUICK_SETS`` when ``quick``) whose
    corpora are all in their folder (``SET_CORPORA``, else ``corpora_dir``);
    ``loco_search``: None skips LOCO."""
    questions = load_queries(Path(queries))
    folders = {q["corpus"]: Path(corpora_dir) for q in questions}
    sets: dict[str, list[dict[str, Any]]] = {}
    if fresh:
        for name, path in FRESH_SETS.items():
            qs = load_queries(path)
            folder = SET_CORPORA.get(name, Path(corpora_dir))
            if (not quick or name in QUICK_SETS) and all(
                    (folder / q["corpus"]).is_dir() for q in qs):
                sets[name] = qs
                folders.update((q["corpus"], folder) for q in qs)
    with tempfile.TemporaryDirectory(prefix="doc-index-quality-") as tmp:
        root = Path(work) if work is not None else Path(tmp)
        started = time.perf_counter()
        corpora = {name: Corpus(build_cache(root, folders[name] / name))
                   for name in sorted(folders)}
        build_seconds = time.perf_counter() - started
        try:
            result = evaluate(_named(corpora, questions), questions, cli=cli)
            result["fresh"] = {
                name: evaluate(_named(corpora, qs), qs, cli=False) for name, qs in sets.items()
            }
            if loco_search is not None:
                result["loco"] = _loco(corpora, questions, result["questions"], loco_search)
        finally:
            for c in corpora.values():
                c.cache.close()
    result["build_seconds"] = round(build_seconds, 3)
    result["sections"] = {name: len(c.ids) for name, c in corpora.items()}
    result["targets"] = targets(result)
    # How sure each lead over plain BM25 is (paired bootstrap over the questions).
    result["leads"] = {name: significance.lead(rows) for name, rows in (
        ("dev", result["questions"]),
        *((n, f["questions"]) for n, f in result["fresh"].items()))}
    # A gold heading the build does not produce (a question gone stale, or a changed title
    # extraction) can never be found: name it rather than let it pass for a ranking miss.
    result["gold_missing"] = {
        name: [f"{r['query']!r}: {m}" for r in rows for m in r["gold_missing"]]
        for name, rows in (("dev", result["questions"]),
                           *((n, f["questions"]) for n, f in result["fresh"].items()))
    }
    return result


def _named(corpora: dict[str, Corpus], questions: list[dict[str, Any]]) -> dict[str, Corpus]:
    """The corpora these questions name, in name order (the groups of ``evaluate``)."""
    names = {q["corpus"] for q in questions}
    return {name: c for name, c in corpora.items() if name in names}


def _loco(corpora: dict[str, Corpus], questions: list[dict[str, Any]],
          rows: list[dict[str, Any]], search: loco.Search) -> dict[str, Any]:
    """``loco.run`` with plain BM25 on each test corpus (from the dev rows) beside it."""
    result = loco.run(corpora, questions, search)
    for direction in result["directions"].values():
        direction["test_bm25s"] = _metrics([r for r in rows if r["corpus"] == direction["test"]],
                                           "bm25s")
    return result


def _target(group: str, measure: str, value: float, bar: str, met: bool) -> dict[str, Any]:
    return {"group": group, "measure": measure, "value": round(value, 4), "target": bar,
            "met": met}


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 14's quality bars for whatever ``result`` holds, each met or missed."""
    out = []
    dev = result["metrics"]
    d = dev["all"]["doc-index"]
    out.append(_target("dev", "MRR@10", d["mrr10"], f">= {DEV_MRR}", d["mrr10"] >= DEV_MRR))
    out.append(_target("dev", "budget-hit@2000", d["budget_hit"], f">= {DEV_BUDGET_HIT}",
                       d["budget_hit"] >= DEV_BUDGET_HIT))
    if dev.get("hard", {}).get("n"):
        h = dev["hard"]["doc-index"]["mrr10"]
        out.append(_target("dev hard", "MRR@10", h, f">= {DEV_HARD_MRR}", h >= DEV_HARD_MRR))
    pairs = [(name, r["metrics"]["all"]["doc-index"], r["metrics"]["all"]["bm25s"])
             for name, r in result.get("fresh", {}).items()]
    pairs += [(f"LOCO {name}", r["test_tuned"], r["test_bm25s"])
              for name, r in result.get("loco", {}).get("directions", {}).items()]
    for group, ours, bm25 in pairs:
        bar = bm25["mrr10"] + LEAD_OVER_BM25
        out.append(_target(group, "MRR@10", ours["mrr10"], f">= BM25 {bm25['mrr10']:.3f} + "
                           f"{LEAD_OVER_BM25}", ours["mrr10"] >= bar - 1e-9))
        out.append(_target(group, "budget-hit@2000", ours["budget_hit"],
                           f">= {FRESH_BUDGET_HIT}", ours["budget_hit"] >= FRESH_BUDGET_HIT))
    return out


def format_table(result: dict[str, Any]) -> str:
    head = f"{'group':<24}{'n':>4}  " + "  ".join(
        f"{s + ' MRR hit5 bhit':<22}" for s in SYSTEMS
    )
    lines = [head, "-" * len(head)]
    for group, m in result["metrics"].items():
        cells = "  ".join(
            f"{m[s]['mrr10']:.2f} {m[s]['hit5']:.2f} {m[s]['budget_hit']:.2f}".ljust(22)
            for s in SYSTEMS
        )
        lines.append(f"{group:<24}{m['n']:>4}  " + cells)
    return "\n".join(lines)


def format_loco(result: dict[str, Any]) -> str:
    lines = [f"{'tuned on -> scored on':<30}{'train MRR def/tuned':>21}  "
             f"{'test MRR hit5 bhit: default':<29}{'tuned':<17}{'bm25s':<17}changed"]
    for name, r in result["directions"].items():
        cells = "".join(
            f"{r[k]['mrr10']:.2f} {r[k]['hit5']:.2f} {r[k]['budget_hit']:.2f}".ljust(w)
            for k, w in (("test_default", 29), ("test_tuned", 17), ("test_bm25s", 17)))
        changed = ", ".join(f"{k} {v['default']:g}->{v['tuned']:g}"
                            for k, v in r["changed"].items())
        lines.append(f"{name:<30}{r['train_mrr10']['default']:>10.2f} "
                     f"{r['train_mrr10']['tuned']:>10.2f}  {cells}{changed or '-'}")
    lines.append(f"({result['rounds']} rounds at most, multipliers {result['multipliers']}, "
                 f"{result['seconds']} s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="?", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("queries", nargs="?", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=None, help="build root (default: temp)")
    parser.add_argument("--details", action="store_true", help="per-question ranks")
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI subprocess check")
    parser.add_argument("--no-fresh", action="store_true", help="skip the fresh question sets")
    parser.add_argument("--no-loco", action="store_true", help="skip leave-one-corpus-out")
    parser.add_argument("--quick", action="store_true",
                        help="as the quick bench: no fresh-2/fresh-3, a one-round LOCO")
    args = parser.parse_args(argv)
    queries = args.queries or args.corpora / "queries-dev.jsonl"
    started = time.perf_counter()
    search = None if args.no_loco else (loco.QUICK if args.quick else loco.FULL)
    result = run(args.corpora, queries, args.work, cli=not args.no_cli, fresh=not args.no_fresh,
                 loco_search=search, quick=args.quick)
    print(f"{queries.name}; columns: MRR@10, hit@5, budget-hit@2000")
    print(format_table(result))
    print()
    for name, fresh in result["fresh"].items():
        print(f"{name} (bench/questions/{name}.jsonl)")
        print(format_table(fresh))
        print()
    if "loco" in result:
        print("leave-one-corpus-out (test columns: MRR@10, hit@5, budget-hit@2000)")
        print(format_loco(result["loco"]))
        print()
    print("lead over plain BM25, 95 % paired bootstrap interval (bench/significance.py):")
    for name, got in result["leads"].items():
        print(significance.format_lead(name, got))
    print()
    for t in result["targets"]:
        print(f"target {t['group']:<40} {t['measure']:<16} {t['value']:.3f} {t['target']:<22} "
              f"{'met' if t['met'] else 'MISSED'}")
    print()
    for name, missing in result["gold_missing"].items():
        for entry in missing:
            print(f"gold not in the build ({name}): {entry}")
    print(f"sections: {result['sections']}  build: {result['build_seconds']} s  "
          f"resolve latency (in-process, budget {BUDGET}): {result['latency_ms']}")
    if "cli_check" in result:
        print(f"CLI subprocess check: {result['cli_check']}")
    if args.details:
        print()
        rows = result["questions"] + [r for f in result["fresh"].values()
                                      for r in f["questions"]]
        for r in rows:
            ranks = " ".join(
                f"{s}={r[s]['rank'] or '-'}{'B' if r[s]['budget_hit'] else ''}" for s in SYSTEMS
            )
            print(f"[{r['corpus'][:5]} {r['difficulty']}] {ranks}  {r['query'][:70]}")
            print(f"      top: {r['doc-index']['top']}")
    print(f"total {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
