"""Retrieval quality of ``context.resolve`` on native caches, against two baselines.

Usage::

    .venv/bin/python bench/quality.py [CORPORA_DIR] [QUERIES] [--work DIR] [--details]

``CORPORA_DIR`` defaults to ``../shared/corpora`` next to the repository and ``QUERIES`` to
``CORPORA_DIR/queries-dev.jsonl``. Each corpus named by a question is built with the real
``IndexStore`` (a full build into a temporary root, or into ``--work``), then every question
is answered three ways over the same sections:

- ``doc-index``: the real resolve path, ``native_selection.select`` in-process (the ranking for
  MRR/hit@5 is ``native_selection.rank``, which ``select`` fills the budget from); a few questions
  are also run through ``python -m doc_index.server.context_cli resolve`` as a subprocess
  to check that the CLI returns the same documents (skipped while that module is missing);
- ``bm25s``: plain BM25 (``bm25s`` defaults, English stopwords, Snowball stemmer) over
  each section's text; bench-only dependency;
- ``v0``: the Context Engine v0 formula, term_matches / total_words over
  whitespace-split lowercase words, ties by id.

Metrics, per corpus, per difficulty (``note`` starts with ``easy:`` or ``hard:``) and
overall: MRR@10, hit@5, and budget-hit@2000 (a gold section is among what a 2,000-token
budget selects). For doc-index that is what the real ``select`` returns: the whole answer
(metadata, provenance, selection object) is charged against the budget, and a document
that is an excerpt of a gold section counts (it carries the section's id). For the
baselines it is greedy over their ranking, skipping what does not fit, with each section's
stored ``tokens`` only (no metadata charged: a more generous budget than doc-index gets).
A ranked section matches a gold entry when its file and its title equal the gold file and
heading after whitespace normalization.

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

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = REPO.parent / "shared" / "corpora"
BUDGET = 2000
SYSTEMS = ("doc-index", "bm25s", "v0")
CLI_CHECKS_PER_CORPUS = 3

Ranker = Callable[[str], list[int]]


def _q(corpus: str, query: str, file: str, heading: str, level: str) -> dict[str, Any]:
    return {"corpus": corpus, "query": query, "gold": [{"file": file, "heading": heading}],
            "note": f"{level}: fresh"}


# Twenty questions written after the ranking was designed, on sections sampled at random
# (seeded) from both corpora, to see how dev-set gains carry over to new questions. They
# were then used once more to choose the page-evidence weight, so they are not a pristine
# test set: treat them as a second opinion, not a held-out score.
FRESH_QUESTIONS: list[dict[str, Any]] = [
    _q('flask-docs', 'stream a huge CSV file to the client without building it all in memory',
       'patterns/streaming.rst', 'Basic Usage', 'hard'),
    _q('flask-docs', 'how do I run my flask app with waitress',
       'deploying/waitress.rst', 'Running', 'easy'),
    _q('flask-docs',
       'start the development server from a python script instead of the command line',
       'server.rst', 'In Code', 'hard'),
    _q('flask-docs', 'stop flask from telling me to install python-dotenv',
       'cli.rst', 'Disable dotenv', 'hard'),
    _q('flask-docs', 'prevent attacks that spoof the Host header',
       'web-security.rst', 'Host Header Validation', 'easy'),
    _q('flask-docs', 'load config values from a separate python file',
       'config.rst', 'Configuring from Python Files', 'easy'),
    _q('flask-docs', 'custom 404 page only for pages under one blueprint',
       'blueprints.rst', 'Blueprint Error Handlers', 'hard'),
    _q('flask-docs', 'my test client returns the redirect response instead of the final page',
       'testing.rst', 'Following Redirects', 'hard'),
    _q('flask-docs', 'debug flask in PyCharm',
       'cli.rst', 'PyCharm Integration', 'easy'),
    _q('flask-docs', 'is async in flask slow, should I use another framework',
       'async-await.rst', 'When to use Quart instead', 'hard'),
    _q('fastapi-docs',
       "require certain OAuth2 scopes on a route without using the dependency's value",
       'advanced/security/oauth2-scopes.md', 'Security in decorator dependencies', 'hard'),
    _q('fastapi-docs', 'return data that differs from the declared return type annotation',
       'tutorial/response-model.md', 'response_model Parameter', 'hard'),
    _q('fastapi-docs', 'return a dict with arbitrary keys as the response',
       'tutorial/extra-models.md', 'Response with arbitrary dict', 'easy'),
    _q('fastapi-docs', 'only accept requests for my own domain names with TrustedHostMiddleware',
       'advanced/middleware.md', 'TrustedHostMiddleware', 'easy'),
    _q('fastapi-docs', 'change the title and version in the generated openapi schema by hand',
       'how-to/extending-openapi.md', 'Overriding the defaults', 'hard'),
    _q('fastapi-docs', 'send a file from disk as the response',
       'advanced/custom-response.md', 'FileResponse', 'easy'),
    _q('fastapi-docs', 'make the dependency cleanup run before the response is sent',
       'tutorial/dependencies/dependencies-with-yield.md', 'Early exit and scope', 'hard'),
    _q('fastapi-docs', 'find out which path prefix the proxy mounted my app under at runtime',
       'advanced/behind-a-proxy.md', 'Checking the current root_path', 'hard'),
    _q('fastapi-docs', 'make JSON responses faster',
       'advanced/custom-response.md', 'JSON Performance', 'hard'),
    _q('fastapi-docs', 'change the URL of the swagger docs page',
       'tutorial/metadata.md', 'Docs URLs', 'easy'),
]


def _norm(text: str) -> str:
    return " ".join(text.split())


def load_queries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def build_cache(root: Path, corpus_dir: Path) -> Path:
    """A full build of ``corpus_dir`` under ``root``; returns the cache directory."""
    from doc_index.store.index_store import IndexStore
    from doc_index.store.sources import scan_directory

    store = IndexStore(root)
    key = f"local-{corpus_dir.name}"
    store.update_index(key, "local", corpus_dir.name, scan_directory(corpus_dir), full=True)
    return store.cache_dir(key)


def budget_pick(order: Sequence[int], tokens: Sequence[int], budget: int = BUDGET) -> list[int]:
    """Greedy budget over a ranking, skipping what does not fit."""
    used = 0
    picked = []
    for d in order:
        if used + tokens[d] <= budget:
            used += tokens[d]
            picked.append(d)
    return picked


class Corpus:
    """One built corpus: its cache, its sections' texts and the three rankers."""

    def __init__(self, cache_dir: Path) -> None:
        from doc_index.server.native_cache import load_native_cache

        self.cache_dir = cache_dir
        self.cache = load_native_cache(cache_dir)
        sections = self.cache.sections
        self.ids = [s["id"] for s in sections]
        self.tokens = [s["tokens"] for s in sections]
        self.keys = [(s["file"], _norm(s["title"])) for s in sections]
        self.texts = [self.cache.section_text(d) for d in range(len(sections))]
        self._v0_words = [t.lower().split() for t in self.texts]
        self._bm25: Any = None

    # doc-index ----------------------------------------------------------------------
    def ours_rank(self, query: str) -> list[int]:
        from doc_index.server.native_selection import rank

        return [entry[2] for entry in rank(self.cache, query)]

    def ours_budget(self, query: str) -> list[int]:
        """The sections ``select`` returns within BUDGET, whole or as an excerpt."""
        from doc_index.server.native_selection import select

        index = {sid: d for d, sid in enumerate(self.ids)}
        result = select(self.cache, query, BUDGET)
        return [index[doc["id"]] for doc in result["documents"]]

    # baselines ----------------------------------------------------------------------
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
                picked = budget_pick(order, corpus.tokens)
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


def run(corpora_dir: Path, queries: Path, work: Path | None = None,
        cli: bool = True, fresh: bool = True) -> dict[str, Any]:
    """Build the corpora the questions name, evaluate, return metrics and details
    (and, under ``"fresh"``, the same for ``FRESH_QUESTIONS`` when their corpora exist)."""
    questions = load_queries(Path(queries))
    names = sorted({q["corpus"] for q in questions})
    extra = [q for q in FRESH_QUESTIONS if q["corpus"] in names] if fresh else []
    with tempfile.TemporaryDirectory(prefix="doc-index-quality-") as tmp:
        root = Path(work) if work is not None else Path(tmp)
        started = time.perf_counter()
        corpora = {name: Corpus(build_cache(root, Path(corpora_dir) / name)) for name in names}
        build_seconds = time.perf_counter() - started
        try:
            result = evaluate(corpora, questions, cli=cli)
            if extra:
                result["fresh"] = evaluate(corpora, extra, cli=False)
        finally:
            for c in corpora.values():
                c.cache.close()
    result["build_seconds"] = round(build_seconds, 3)
    result["sections"] = {name: len(c.ids) for name, c in corpora.items()}
    return result


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="?", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("queries", nargs="?", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=None, help="build root (default: temp)")
    parser.add_argument("--details", action="store_true", help="per-question ranks")
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI subprocess check")
    parser.add_argument("--no-fresh", action="store_true", help="skip FRESH_QUESTIONS")
    args = parser.parse_args(argv)
    queries = args.queries or args.corpora / "queries-dev.jsonl"
    started = time.perf_counter()
    result = run(args.corpora, queries, args.work, cli=not args.no_cli, fresh=not args.no_fresh)
    print(f"{queries.name}; columns: MRR@10, hit@5, budget-hit@2000")
    print(format_table(result))
    print()
    if "fresh" in result:
        print("FRESH_QUESTIONS (written after the design; see the note in the source)")
        print(format_table(result["fresh"]))
        print()
    print(f"sections: {result['sections']}  build: {result['build_seconds']} s  "
          f"resolve latency (in-process, budget {BUDGET}): {result['latency_ms']}")
    if "cli_check" in result:
        print(f"CLI subprocess check: {result['cli_check']}")
    if args.details:
        print()
        for r in result["questions"] + result.get("fresh", {}).get("questions", []):
            ranks = " ".join(
                f"{s}={r[s]['rank'] or '-'}{'B' if r[s]['budget_hit'] else ''}" for s in SYSTEMS
            )
            print(f"[{r['corpus'][:5]} {r['difficulty']}] {ranks}  {r['query'][:70]}")
            print(f"      top: {r['doc-index']['top']}")
    print(f"total {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
