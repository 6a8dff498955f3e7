"""The lexical ranking and the query's similarity to each section, fused into one ranking.

Inputs: the lexical ranking without its floor (``(score, id, section)``, scores scaled to
[0, 1] by the best, as ``rank`` gives them: only sections whose own text holds a query
term are in it), and the cosine of the query with every section (``codes.similarities``).

1. Candidates: every section of the lexical ranking (its order and floor play no part)
   and the ``k`` sections most similar to the query (ties by id).
2. Each candidate's dense score is its cosine over the best cosine of the cache, at
   least 0 (so both scores are "a share of the best" in [0, 1]); its lexical score is
   its score in the lexical ranking, 0 when its text holds no query term.
3. fused = ``weight`` x lexical + (1 - ``weight``) x dense, scaled by the best fused score
   and rounded to ``DECIMALS`` decimals; the order is fused score descending, then id
   ascending; an exact duplicate (same version) of a better-ranked section is dropped.
4. Selectable (the floor): a section whose fused score is at least ``floor`` x the best;
   one whose text holds no query term only when, in addition, it is among the
   ``meaning_top`` most similar sections and its cosine is at least ``meaning_share`` of
   the best cosine: it is selected by meaning alone, and ``why`` says so.

Rounding before the tie-break is what keeps answers equal across machines: the cosines
are exact functions of the int8 codes, and a fused score changes only when a code does.
The constants were chosen on the dev, fresh-1 and fresh-2 questions with
leave-one-corpus-out (``bench/semantic.py``; ``docs/decisions/answers-by-meaning.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

DECIMALS = 3  # 4 decimals: 6 of 163 answers changed across onnxruntime settings; 3: none


class FusionParams(NamedTuple):
    weight: float = 0.5  # of the lexical score
    k: int = 10  # candidates by similarity (every lexical section is one)
    floor: float = 0.25  # relative to the best fused score
    meaning_top: int = 3  # a section with no query term: among this many most similar
    meaning_share: float = 0.9  # ... and its cosine at least this share of the best
    relative: bool = True  # dense score: cosine / best cosine (else the cosine, >= 0)


FUSION = FusionParams()


class Fused(NamedTuple):
    score: float  # fused, in [0, 1], rounded
    id: str
    d: int  # section number
    lexical: float  # 0.0: the section's text holds no query term
    similarity: float  # the dense score (cosine / best cosine), rounded


def dense_order(cosines: Any, ids: Sequence[str], k: int) -> list[int]:
    """The ``k`` sections most similar to the query, best first, ties by id."""
    import numpy as np  # lazy: the model's libraries load only when answers use meaning

    n = len(cosines)
    if n == 0 or k <= 0:
        return []
    top = np.argpartition(-cosines, min(k, n) - 1)[:k] if k < n else np.arange(n)
    edge = cosines[top].min()
    pool = np.nonzero(cosines >= edge)[0]  # every section tied with the k-th
    order = sorted(pool.tolist(), key=lambda d: (-cosines[d], ids[d]))
    return order[:k]


def fuse(lexical: Sequence[tuple[float, str, int]], cosines: Any, ids: Sequence[str],
         versions: Sequence[str], params: FusionParams = FUSION) -> list[Fused]:
    """The fused ranking, floor applied, duplicates dropped (see the module docstring)."""
    import numpy as np  # lazy: the model's libraries load only when answers use meaning

    dense = dense_order(cosines, ids, params.k)
    lex_d = [d for _, _, d in lexical]
    lex_s = [s for s, _, _ in lexical]
    in_lex = set(lex_d)
    extra = [d for d in dense if d not in in_lex]
    cand = np.array(lex_d + extra, dtype=np.int64)
    if len(cand) == 0:
        return []
    lex = np.array(lex_s + [0.0] * len(extra), dtype=np.float64)
    best_cos = float(cosines[dense[0]]) if dense else 0.0
    sim = np.maximum(np.asarray(cosines, dtype=np.float64)[cand], 0.0)
    if params.relative:
        sim = sim / best_cos if best_cos > 0 else np.zeros_like(sim)
    # IEEE elementwise products and sums, one operation at a time: the same bits as
    # Python floats (numpy never fuses them into a multiply-add).
    raw = params.weight * lex + (1.0 - params.weight) * sim
    best = float(raw.max())
    if best <= 0.0:
        return []
    share = sim if params.relative else (sim / best_cos if best_cos > 0 else sim * 0.0)
    meaning_ok = set(dense[:params.meaning_top])
    out = []
    for j in np.nonzero(raw >= params.floor * best * (1.0 - 1e-9))[0].tolist():
        score = round(float(raw[j]) / best, DECIMALS)
        d = int(cand[j])
        if score < params.floor:
            continue
        if j >= len(lex_d) and (d not in meaning_ok or share[j] < params.meaning_share):
            continue
        out.append(Fused(score, ids[d], d, float(lex[j]), round(float(sim[j]), DECIMALS)))
    out.sort(key=lambda f: (-f.score, f.id))
    seen: set[str] = set()
    unique = []
    for f in out:
        if versions[f.d] not in seen:
            seen.add(versions[f.d])
            unique.append(f)
    return unique
