"""Ablation of the ranking's signals: one row per ``Params`` setting, same caches, same run.

Usage::

    .venv/bin/python bench/ablation.py [CORPORA_DIR] [--work DIR] [--wordllama]

Each row scores every question set whose corpora are present, with ``rank`` and the real
``select`` (rows without ``select`` pack greedily over their ranking): the dev questions
(``CORPORA_DIR/queries-dev.jsonl``), fresh-1 and fresh-2 (``bench/questions/``), and
fresh-2 per corpus. fresh-2 is the held-out check: only these aggregates are read, never
its questions or per-question results, and a change is kept only when it helps (or is
neutral on) every set. Rows: the shipped ranking, then one per signal turned off or set to
a plain value (``ROWS``), identifier parts kept out of the query, plain BM25 (``bm25s``).
With ``--wordllama`` (needs ``pip install wordllama``; loaded offline from its wheel),
upper bounds of what a full static-embedding model gives, none of which ships:
``cosine``: the current score plus 0.5 x cosine(query, section title and first 60 words)
among the top 50; ``expand-all``: every query word's 3 nearest corpus terms (cosine >=
0.4) as forms at half weight; ``expand-missing``: the same, only for words the cache lacks
(what ``related`` approximates with a fixed English table).

Measured at this commit (MRR@10/budget-hit@2000; n: dev 50, fresh-1 20, fresh-2 48, 16
per fresh-2 corpus; one question moves a 16-question MRR by up to 0.06)::

    row                                 dev    fresh-1    fresh-2   f2:click   f2:httpx   f2:sqlal
    ----------------------------------------------------------------------------------------------
    shipped                      0.815/0.92 0.563/0.80 0.568/0.69 0.480/0.62 0.709/0.81 0.515/0.62
    field weights 1/1/1          0.801/0.90 0.538/0.80 0.579/0.71 0.481/0.69 0.742/0.81 0.515/0.62
    no path field                0.812/0.92 0.539/0.75 0.541/0.69 0.449/0.62 0.662/0.81 0.511/0.62
    b 0.75 on every field        0.805/0.92 0.563/0.75 0.568/0.69 0.480/0.62 0.709/0.81 0.515/0.62
    b body 0.5                   0.810/0.92 0.544/0.75 0.586/0.69 0.464/0.62 0.760/0.81 0.533/0.62
    k1 0.9                       0.814/0.92 0.560/0.85 0.582/0.69 0.474/0.62 0.717/0.81 0.556/0.62
    k1 2.0                       0.796/0.92 0.566/0.75 0.568/0.69 0.486/0.69 0.734/0.81 0.483/0.56
    no heading bonus             0.780/0.92 0.546/0.75 0.563/0.73 0.451/0.75 0.709/0.81 0.528/0.62
    heading bonus, 1 concept     0.818/0.92 0.563/0.80 0.551/0.67 0.467/0.62 0.678/0.81 0.507/0.56
    no page evidence             0.797/0.92 0.543/0.85 0.586/0.69 0.481/0.62 0.693/0.81 0.583/0.62
    page evidence 0.25           0.801/0.92 0.543/0.80 0.566/0.69 0.481/0.62 0.703/0.81 0.512/0.62
    no release-notes prior       0.813/0.90 0.562/0.75 0.568/0.69 0.480/0.62 0.709/0.81 0.515/0.62
    no near-empty prior          0.815/0.92 0.563/0.80 0.568/0.69 0.480/0.62 0.709/0.81 0.515/0.62
    no alternatives              0.805/0.92 0.563/0.80 0.564/0.69 0.480/0.62 0.709/0.81 0.502/0.62
    no related words             0.815/0.92 0.538/0.80 0.580/0.69 0.522/0.62 0.703/0.81 0.515/0.62
    related weight 1.0, count 3  0.815/0.92 0.563/0.80 0.567/0.71 0.480/0.62 0.705/0.88 0.515/0.62
    floor 0.1                    0.815/0.92 0.563/0.80 0.575/0.71 0.501/0.69 0.709/0.81 0.515/0.62
    query identifier parts off   0.805/0.92 0.563/0.75 0.568/0.69 0.480/0.62 0.709/0.81 0.515/0.62
    plain BM25 (bm25s)           0.650/0.90 0.544/0.75 0.508/0.73 0.456/0.81 0.594/0.88 0.473/0.50

What the table says, per signal (all sets, not one):

- path field (file path words and ancestor headings): the strongest single signal; off
  costs every set (fresh-1 -0.02, fresh-2 -0.03).
- heading bonus: off costs dev -0.04 and fresh-1 -0.02 but fresh-2 -0.005 only; given to
  headings that hold one concept of a longer question (as before issue 14) it cost
  fresh-2 0.017 (every corpus) for +0.003 on dev: now it needs two concepts.
- page evidence: off helps sqlalchemy (+0.07: long pages that hold every word) and costs
  dev (-0.02) and fresh-1 (-0.02); kept at 0.5, no setting (0.25 here) helped every set.
- k1 0.9, body b 0.5, field weights 1/1/1: each helps some sets and costs others (sqlalchemy
  and fastapi against flask and click): the optimum is flat, defaults kept.
- release-notes prior: off costs dev/fresh-1 budget-hit; it used to demote every section
  under a ``changelog/`` folder, which in sqlalchemy are upgrade guides: fixed in
  ``indexer.analysis.section_features`` (fresh-2 sqlalchemy MRR 0.338 -> 0.507, nothing
  else moved; not a row here, as it is a build-time feature).
- alternatives (abbreviations, two-word verbs) and query identifier parts: small gains on
  dev and sqlalchemy, neutral elsewhere.
- related words (a stand-in for a word the cache lacks): +0.025 fresh-1, -0.04 click
  (one question each way); kept.
- floor 0.1: a little more budget-hit on click (packing is ``select``'s, issue 14 item 2).

Earlier measurement (before issue 14's ranking changes; dev and fresh-1 only;
``--wordllama``; MRR@10, hit@5, budget-hit, hard MRR)::

    row                              dev MRR  hit5  bhit  hard | fresh-1 MRR  hit5  bhit  hard
    baseline (related off)             0.818  0.94  0.92 0.725 |       0.538  0.65  0.80 0.376
    related (shipped)                  0.818  0.94  0.92 0.725 |       0.563  0.65  0.80 0.417
    related weight 0.25                0.818  0.94  0.92 0.725 |       0.538  0.65  0.80 0.376
    related weight 1.0                 0.818  0.94  0.92 0.725 |       0.563  0.65  0.80 0.417
    related count 2                    0.818  0.94  0.92 0.725 |       0.563  0.65  0.80 0.417
    related count 3                    0.818  0.94  0.92 0.725 |       0.563  0.65  0.80 0.417
    plain BM25 (bm25s)                 0.650  0.90  0.90 0.637 |       0.544  0.75  0.75 0.413
    wordllama cosine (upper bound)     0.798  0.92  0.92 0.698 |       0.557  0.65  0.80 0.391
    wordllama expand-all               0.780  0.94  0.92 0.683 |       0.527  0.65  0.75 0.383
    wordllama expand-missing           0.818  0.94  0.92 0.725 |       0.563  0.65  0.80 0.417

The related-words fallback fires on 2 of the 70 questions (their corpora use almost every
word asked) and changes one rank ("huge" -> "large": 2 -> 1); the full model's signals
score no better and lose on dev when they touch words the corpus uses. Also tried once and
left out (not in the rows above, so no code for it): two adjacent query words joined into
an identifier the corpus uses ("test client" -> ``test_client``) as a form at weight 0.5:
no change on either set; at weight 1.0: dev MRR 0.818 -> 0.795, fresh-1 unchanged.
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

from doc_index.indexer.analysis import WORD, Concept, word_terms  # noqa: E402
from doc_index.server import native_selection as ns  # noqa: E402

from bench import quality  # noqa: E402

OFF = dataclasses.replace(ns.PARAMS, related=0.0)
_P = ns.PARAMS
# One row per signal: the shipped ranking with that signal off (or set to a plain value).
ROWS: list[tuple[str, ns.Params]] = [
    ("shipped", _P),
    ("field weights 1/1/1", dataclasses.replace(_P, weights=(1.0, 1.0, 1.0))),
    ("no path field", dataclasses.replace(_P, weights=(_P.weights[0], 0.0, _P.weights[2]))),
    ("b 0.75 on every field", dataclasses.replace(_P, b=(0.75, 0.75, 0.75))),
    ("b body 0.5", dataclasses.replace(_P, b=(_P.b[0], _P.b[1], 0.5))),
    ("k1 0.9", dataclasses.replace(_P, k1=0.9)),
    ("k1 2.0", dataclasses.replace(_P, k1=2.0)),
    ("no heading bonus", dataclasses.replace(_P, title_bonus=0.0)),
    ("heading bonus, 1 concept", dataclasses.replace(_P, title_concepts=1)),
    ("no page evidence", dataclasses.replace(_P, page=0.0)),
    ("page evidence 0.25", dataclasses.replace(_P, page=0.25)),
    ("no release-notes prior", dataclasses.replace(_P, changelog=1.0)),
    ("no near-empty prior", dataclasses.replace(_P, empty=1.0)),
    ("no alternatives", dataclasses.replace(_P, alt_weight=0.0)),
    ("no related words", OFF),
    ("related weight 1.0, count 3", dataclasses.replace(_P, related=1.0, related_count=3)),
    ("floor 0.1", dataclasses.replace(_P, floor=0.1)),
]
# A ranking: (corpus, query) -> section numbers, best first.
Rank = Callable[[quality.Corpus, str], list[int]]


def _score(corpora: dict[str, quality.Corpus], questions: list[dict[str, Any]], rank: Rank,
           budget: Rank | None) -> dict[str, float]:
    rr: list[float] = []
    hard: list[float] = []
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
        if q.get("note", "").startswith("hard"):
            hard.append(rr[-1])
    n = len(questions)
    return {"mrr": sum(rr) / n, "hit5": hit5 / n, "bhit": bhit / n,
            "hard": sum(hard) / len(hard) if hard else 0.0}


def _ours(params: ns.Params) -> tuple[Rank, Rank]:
    def rank(c: quality.Corpus, query: str) -> list[int]:
        return [e[2] for e in ns.rank(c.cache, query, params)]

    def budget(c: quality.Corpus, query: str) -> list[int]:
        index = {sid: d for d, sid in enumerate(c.ids)}
        result = ns.select(c.cache, query, quality.BUDGET, params)
        return [index[doc["id"]] for doc in result["documents"]]

    return rank, budget


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
            ranked = ns.rank(c.cache, query, OFF)
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
            for con in ns._concepts(query):
                word = words.get(con.main)
                lacks = not any(t in c.cache.index.terms for t in con.terms)
                if word is None or (missing_only and not lacks):
                    out.append(con)
                    continue
                sims = vecs @ self.model.embed([word], norm=True)[0]
                near = [stems[i] for i in np.argsort(-sims)[:10]
                        if sims[i] >= 0.4 and stems[i] not in con.terms][:3]
                out.append(Concept(con.main, con.parts, con.alts, tuple(near)))
            return [e[2] for e in ns.rank_concepts(c.cache, out, ns.PARAMS)]
        return rank


def _no_parts(params: ns.Params) -> Rank:
    """The query's identifiers kept whole only (documents are still split at build time)."""
    def rank(c: quality.Corpus, query: str) -> list[int]:
        concepts = [con._replace(parts=()) for con in ns._concepts(query, c.cache, params)]
        return [e[2] for e in ns.rank_concepts(c.cache, concepts, params)]
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
            out += [(f"f{name[-1]}:{c.split('-')[0][:5]}", [q for q in qs if q["corpus"] == c])
                    for c in corpora]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="?", type=Path, default=quality.DEFAULT_CORPORA)
    parser.add_argument("--work", type=Path, default=None, help="build root (default: temp)")
    parser.add_argument("--wordllama", action="store_true", help="add the upper-bound rows")
    args = parser.parse_args(argv)
    sets = _sets(args.corpora)
    names = sorted({q["corpus"] for _, qs in sets for q in qs})
    with tempfile.TemporaryDirectory(prefix="doc-index-ablation-") as tmp:
        root = args.work or Path(tmp)
        corpora = {n: quality.Corpus(quality.build_cache(root, args.corpora / n)) for n in names}
        rows: list[tuple[str, Rank, Rank | None]] = [
            (name, *_ours(params)) for name, params in ROWS]
        rows.append(("query identifier parts off", _no_parts(ns.PARAMS), None))
        rows.append(("plain BM25 (bm25s)", lambda c, q: c.bm25_rank(q), None))
        if args.wordllama:
            wl = _WordLlama(corpora)
            rows += [("wordllama cosine (upper bound)", wl.cosine(0.5, 50), None),
                     ("wordllama expand-all", wl.expand(False), None),
                     ("wordllama expand-missing", wl.expand(True), None)]
        print("MRR@10/budget-hit@2000 per set (n: "
              + ", ".join(f"{name} {len(qs)}" for name, qs in sets)
              + "); rows without select: their ranking packed as select packs")
        head = f"{'row':<28}" + "".join(f"{name:>11}" for name, _ in sets)
        print(head)
        print("-" * len(head))
        for name, rank, budget in rows:
            cells = []
            for _, qs in sets:
                m = _score(corpora, qs, rank, budget)
                cells.append(f"{m['mrr']:.3f}/{m['bhit']:.2f}")
            print(f"{name:<28}" + "".join(f"{c:>11}" for c in cells), flush=True)
        for c in corpora.values():
            c.cache.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
