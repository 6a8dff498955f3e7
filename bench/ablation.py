"""Ablation of the ranking's rules: one row per ``Params`` setting, same caches, same run.

Usage::

    .venv/bin/python bench/ablation.py [CORPORA_DIR] [--work DIR] [--write FILE]
                                       [--wordllama]

Each row scores every question set whose corpora are present, with ``rank`` (MRR@10,
hit@5) and the real ``select`` (budget-hit@2000; rows without ``select`` pack their
ranking as ``select`` packs): the dev questions (``CORPORA_DIR/queries-dev.jsonl``),
fresh-1 and fresh-2 (``bench/questions/``), and fresh-2 per corpus. fresh-3 is left out:
it is the held-out set, never used to choose a change (``bench/questions/README.md``).
With ``--deps-root DIR`` (default ``bench/work/deps-root`` when it exists, the root
``python -m bench.deps_eval sync`` fills) the last two columns score the dev half of the
blind dependency questions (``bench.deps_eval``; never the held-out half), lexically and by
meaning (:class:`DepsDev`): answered@2000 and MRR@10 of the first section holding the
evidence. ``--deps-only`` and ``--rows`` give a quick check of a few rows while tuning.
Rows: the shipped ranking; each rule of ``search.ranking.RULE_NAMES`` switched off
(``Params.off``; not ``bm25f`` and ``score``, without which nothing is ranked); other
settings of the weights; plain BM25 (``bm25s``). With ``--write FILE`` the table replaces
what stands between the ``ablation`` markers of FILE (``docs/decisions/ranking-rules.md``), so the
file's
table is what this command prints; the output is deterministic (no timings).

With ``--wordllama`` (needs ``pip install wordllama``; loaded offline from its wheel),
upper bounds of what a full static-embedding model gives, none of which ships:
``cosine``: the current score plus 0.5 x cosine(query, section title and first 60 words)
among the top 50; ``expand-all``: every query word's 3 nearest corpus terms (cosine >=
0.4) as forms at half weight; ``expand-missing``: the same, only for words the cache lacks
(what ``related_words`` approximates with a fixed English table).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import quality  # noqa: E402
from doc_index.indexer.analysis import WORD, Concept, word_terms  # noqa: E402
from doc_index.search import ranking  # noqa: E402
from doc_index.search.native_selection import fused_ranking, pack, select  # noqa: E402
from doc_index.search.ranking import PARAMS, Params  # noqa: E402

OFF = dataclasses.replace(PARAMS, related=0.0)  # the wordllama rows' base
_P = PARAMS
# Rules without which nothing is ranked: never switched off here.
BASE_RULES = ("bm25f", "score")
# One row per rule switched off, then other settings of the weights.
ROWS: list[tuple[str, Params]] = [
    ("shipped", _P),
    *[(f"off: {name}", dataclasses.replace(_P, off=(name,)))
      for name in ranking.RULE_NAMES if name not in BASE_RULES],
    ("field weights 1/1/1", dataclasses.replace(_P, weights=(1.0, 1.0, 1.0))),
    ("no path field", dataclasses.replace(_P, weights=(_P.weights[0], 0.0, _P.weights[2]))),
    ("b 0.75 on every field", dataclasses.replace(_P, b=(0.75, 0.75, 0.75))),
    ("b body 0.5", dataclasses.replace(_P, b=(_P.b[0], _P.b[1], 0.5))),
    ("k1 0.9", dataclasses.replace(_P, k1=0.9)),
    ("k1 2.0", dataclasses.replace(_P, k1=2.0)),
    ("heading bonus, 1 concept", dataclasses.replace(_P, title_concepts=1)),
    ("page evidence 0.25", dataclasses.replace(_P, page=0.25)),
    ("alternatives at weight 0", dataclasses.replace(_P, alt_weight=0.0)),
    ("related weight 1.0, count 3", dataclasses.replace(_P, related=1.0, related_count=3)),
    ("floor 0.1", dataclasses.replace(_P, floor=0.1)),
    ("release notes 0.3", dataclasses.replace(_P, changelog=0.3)),
    ("deprecated 0.25", dataclasses.replace(_P, deprecated=0.25)),
    ("API siblings 0.8", dataclasses.replace(_P, siblings=0.8)),
    ("release notes 0.5 when asked", dataclasses.replace(_P, changelog_asked=0.5)),
    ("later documents whole (share 1)", dataclasses.replace(_P, later_share=(1, 1))),
    ("later share 1/3", dataclasses.replace(_P, later_share=(1, 3))),
]
START, END = "<!-- ablation: start -->", "<!-- ablation: end -->"
# A ranking: (corpus, query) -> section numbers, best first.
Rank = Callable[[quality.Corpus, str], list[int]]
# A row: its name, its ranking, its budgeted selection (None: the ranking packed), and its
# parameters (None: not doc-index's ranking, no dependency column).
Row = tuple[str, Rank, Rank | None, Params | None]
DEPS_ROOT = Path(__file__).resolve().parents[1] / "bench" / "work" / "deps-root"


class DepsDev:
    """The dev half of the blind dependency questions on a synced root, scored per
    ``Params`` in both modes: answered@2000 (the real ``select``'s packing) and MRR@10 of
    the first section holding the evidence, lexical (``rank``) and by meaning (the fused
    ranking ``select`` packs, ``fused_ranking``; each query's cosines computed once, since
    no ``Params`` changes them). Caches without vectors answer lexically in meaning mode,
    as ``resolve`` does."""

    def __init__(self, root: Path, model_dir: Path | None) -> None:
        import json

        from bench import deps_eval
        from doc_index.store.native_cache import load_native_cache

        self.deps_eval = deps_eval
        dev = set(json.loads(deps_eval.SPLIT_FILE.read_text())["dev"])
        self.questions = [q for q in deps_eval.load_questions() if q["id"] in dev]
        self.caches: dict[str, Any] = {}
        for q in self.questions:
            name = deps_eval.cache_name(q)
            if name not in self.caches:
                path = root / name
                self.caches[name] = load_native_cache(path) \
                    if (path / "manifest.json").exists() else None
        self.model_dir = model_dir or deps_eval._default_model()
        self._cosines: dict[str, Any] = {}

    def cosines(self, q: dict[str, Any], cache: Any) -> Any:
        """The query's similarity to every section (None: no vectors or no model)."""
        from doc_index.search.meaning import similarity

        if q["id"] not in self._cosines:
            self._cosines[q["id"]] = similarity(cache, q["query"], self.model_dir)[0]
        return self._cosines[q["id"]]

    def score(self, params: Params) -> list[str]:
        """One cell per mode: answered / MRR@10."""
        holds = self.deps_eval.holds
        got = {"lexical": [0, 0.0], "meaning": [0, 0.0]}
        for q in self.questions:
            cache = self.caches[self.deps_eval.cache_name(q)]
            if cache is None:
                continue
            found = ranking.concepts(q["query"], cache, params)
            lexical = ranking.rank_concepts(cache, found, params, q["query"])
            cos = self.cosines(q, cache)
            meaning, sims = (lexical, None) if cos is None else \
                fused_ranking(cache, q["query"], found, cos, params)
            for mode, ranked, similarity in (("lexical", lexical, None),
                                             ("meaning", meaning, sims)):
                docs = pack(cache, q["query"], quality.BUDGET, found, ranked, params,
                            similarity)["documents"]
                got[mode][0] += holds("\n".join(d["content"] for d in docs), q["evidence"])
                for i, (_, _, d) in enumerate(ranked[:10], 1):
                    if holds(cache.section_text(d), q["evidence"]):
                        got[mode][1] += 1.0 / i
                        break
        n = len(self.questions)
        return [f"{int(a)}/{n} / {rr / n:.3f}" for a, rr in got.values()]

    def close(self) -> None:
        for cache in self.caches.values():
            if cache is not None:
                cache.close()


def _score(corpora: dict[str, quality.Corpus], questions: list[dict[str, Any]], rank: Rank,
           budget: Rank | None) -> dict[str, float]:
    rr: list[float] = []
    hit5 = bhit = 0
    for q in questions:
        c = corpora[q["corpus"]]
        gold = {(g["file"], quality._norm(g["heading"])) for g in q["gold"]}
        order = rank(c, q["query"])
        r = quality._first_gold(order, c.keys, gold, 10)
        picked = budget(c, q["query"]) if budget else c.packed(q["query"], order)
        rr.append(1.0 / r if r else 0.0)
        hit5 += bool(r and r <= 5)
        bhit += any(c.keys[d] in gold for d in picked)
    n = len(questions)
    return {"mrr": sum(rr) / n, "hit5": hit5 / n, "bhit": bhit / n}


def _ours(params: Params) -> tuple[Rank, Rank, Params]:
    def rank(c: quality.Corpus, query: str) -> list[int]:
        return [e[2] for e in ranking.rank(c.cache, query, params)]

    def budget(c: quality.Corpus, query: str) -> list[int]:
        index = {sid: d for d, sid in enumerate(c.ids)}
        result = select(c.cache, query, quality.BUDGET, params)
        return [index[doc["id"]] for doc in result["documents"]]

    return rank, budget, params


class _WordLlama:
    """Upper bounds with the full wordllama model (bench only, never shipped)."""

    def __init__(self, corpora: dict[str, quality.Corpus]) -> None:
        import wordllama
        from wordllama import WordLlama

        self.model = WordLlama.load(cache_dir=os.path.dirname(wordllama.__file__),
                                    disable_download=True)
        self.vocab: dict[str, tuple[list[str], Any]] = {}
        self.sections: dict[int, Any] = {}
        for c in corpora.values():
            forms: dict[str, Counter[str]] = defaultdict(Counter)
            for text in c.texts:
                for w in WORD.findall(text):
                    got = word_terms(w)
                    if got:
                        forms[got[0]][w.lower()] += 1
            terms = c.cache.index.terms
            stems = sorted(s for s in forms if s.isalpha() and terms.get(s, (0, 0))[1] >= 2)
            words = [forms[s].most_common(1)[0][0] for s in stems]
            self.vocab[id(c)] = (stems, self.model.embed(words, norm=True))
            heads = [s["title"] + " " + " ".join(t.split()[:60])
                     for s, t in zip(c.cache.sections, c.texts)]
            self.sections[id(c)] = self.model.embed(heads, norm=True)

    def cosine(self, weight: float, top: int) -> Rank:
        def rank(c: quality.Corpus, query: str) -> list[int]:
            ranked = ranking.rank(c.cache, query, OFF)
            qv = self.model.embed([query], norm=True)[0]
            sv = self.sections[id(c)]
            head = sorted(((s + weight * float(sv[d] @ qv), sid, d) for s, sid, d in ranked[:top]),
                          key=lambda e: (-e[0], e[1]))
            return [e[2] for e in head] + [e[2] for e in ranked[top:]]
        return rank

    def expand(self, missing_only: bool) -> Rank:
        import numpy as np

        def rank(c: quality.Corpus, query: str) -> list[int]:
            stems, vecs = self.vocab[id(c)]
            words = {word_terms(w)[0]: w.lower() for w in reversed(WORD.findall(query))
                     if word_terms(w)}
            out = []
            for con in ranking.concepts(query):
                word = words.get(con.main)
                lacks = not any(t in c.cache.index.terms for t in con.terms)
                if word is None or (missing_only and not lacks):
                    out.append(con)
                    continue
                sims = vecs @ self.model.embed([word], norm=True)[0]
                near = [stems[i] for i in np.argsort(-sims)[:10]
                        if sims[i] >= 0.4 and stems[i] not in con.terms][:3]
                out.append(Concept(con.main, con.parts, con.alts, tuple(near)))
            return [e[2] for e in ranking.rank_concepts(c.cache, out, PARAMS)]
        return rank


def _sets(corpora_dir: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """dev, fresh-1, fresh-2 (whose corpora are present), and fresh-2 per corpus: its
    aggregates are the held-out check (its questions are never read to tune). The
    ``quality.HELD_OUT`` sets (fresh-3) are left out: a change is never chosen on them."""
    out = [("dev", quality.load_queries(corpora_dir / "queries-dev.jsonl"))]
    for name, path in quality.FRESH_SETS.items():
        if name in quality.HELD_OUT:
            continue
        qs = quality.load_queries(path)
        if all((corpora_dir / q["corpus"]).is_dir() for q in qs):
            out.append((name, qs))
    for name, qs in list(out[1:]):
        corpora = sorted({q["corpus"] for q in qs})
        if len(corpora) > 2:
            out += [(f"{name} {c.split('-')[0]}", [q for q in qs if q["corpus"] == c])
                    for c in corpora]
    return out


def table(corpora: dict[str, quality.Corpus], sets: list[tuple[str, list[dict[str, Any]]]],
          rows: list[Row], deps: DepsDev | None = None) -> list[str]:
    """The ablation table in Markdown: one line per row, a cell per set (and the
    dependency questions' cell when ``deps`` is given)."""
    names = [name for name, _ in sets]
    head = ("Each cell: MRR@10 / hit@5 / budget-hit@2000. Questions: "
            + ", ".join(f"{name} {len(qs)}" for name, qs in sets) + ".")
    if deps is not None:
        names += ["deps dev lexical", "deps dev meaning"]
        head += (f" deps dev: the dev half of the blind dependency questions "
                 f"({len(deps.questions)}, bench/deps_eval.py), answered@2000 / MRR@10 of "
                 "the first section holding the evidence, lexical and by meaning.")
    out = [head, "", "| row | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
    for name, rank, budget, params in rows:
        cells = []
        for _, qs in sets:
            m = _score(corpora, qs, rank, budget)
            cells.append(f"{m['mrr']:.3f} / {m['hit5']:.2f} / {m['bhit']:.2f}")
        if deps is not None:
            cells += deps.score(params) if params is not None else ["-", "-"]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
        print(out[-1], file=sys.stderr, flush=True)  # progress: a row takes seconds
    return out


def write_between_markers(path: Path, lines: list[str]) -> None:
    """Replace what stands between ``START`` and ``END`` in ``path`` by ``lines``."""
    text = path.read_text("utf-8")
    head, sep, rest = text.partition(START + "\n")
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"error: {path} has no {START} ... {END} markers")
    path.write_text(head + START + "\n" + "\n".join(lines) + "\n" + END + tail, "utf-8")


def _rows(corpora: dict[str, quality.Corpus], wordllama: bool) -> list[Row]:
    rows: list[Row] = [(name, *_ours(params)) for name, params in ROWS]
    rows.append(("plain BM25 (bm25s)", lambda c, q: c.bm25_rank(q), None, None))
    if wordllama:
        wl = _WordLlama(corpora)
        rows += [("wordllama cosine (upper bound)", wl.cosine(0.5, 50), None, None),
                 ("wordllama expand-all", wl.expand(False), None, None),
                 ("wordllama expand-missing", wl.expand(True), None, None)]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="?", type=Path, default=quality.DEFAULT_CORPORA)
    parser.add_argument("--work", type=Path, default=None, help="build root (default: temp)")
    parser.add_argument("--write", type=Path, default=None,
                        help="put the table between the markers of this file")
    parser.add_argument("--wordllama", action="store_true", help="add the upper-bound rows")
    parser.add_argument("--deps-root", type=Path, default=None,
                        help="a root deps_eval synced (default: bench/work/deps-root if any)")
    parser.add_argument("--model", type=Path, default=None,
                        help="the model's folder for the meaning column (default: packaged)")
    parser.add_argument("--rows", nargs="+", default=None,
                        help="only the rows whose names start with one of these")
    parser.add_argument("--deps-only", action="store_true",
                        help="only the dependency column (a quick check while tuning)")
    args = parser.parse_args(argv)
    deps_root = args.deps_root or (DEPS_ROOT if DEPS_ROOT.is_dir() else None)
    deps = DepsDev(deps_root, args.model) if deps_root is not None else None
    sets = [] if args.deps_only else _sets(args.corpora)
    names = sorted({q["corpus"] for _, qs in sets for q in qs})
    with tempfile.TemporaryDirectory(prefix="doc-index-ablation-") as tmp:
        root = args.work or Path(tmp)
        corpora = {n: quality.Corpus(quality.build_cache(root, args.corpora / n)) for n in names}
        rows = [r for r in _rows(corpora, args.wordllama)
                if args.rows is None or r[0].startswith(tuple(args.rows))]
        lines = table(corpora, sets, rows, deps)
        for c in corpora.values():
            c.cache.close()
    if deps is not None:
        deps.close()
    if args.write is not None:
        write_between_markers(args.write, lines)
    else:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
