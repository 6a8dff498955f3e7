"""Choosing the embedding model (issue 30): each candidate of ``bench/semantic_candidates.py``
through the product's fusion and packer, on the dev question sets only, with its costs.

Usage (after ``make bench-semantic-models``)::

    .venv/bin/python -m bench.semantic_models_eval embed [--models a,b] [--pieces 64]
    .venv/bin/python -m bench.semantic_models_eval quality [--models a,b]
    .venv/bin/python -m bench.semantic_models_eval cost [--models a,b]

- ``embed``: section vectors of the dev corpora (flask, fastapi, click, httpx,
  sqlalchemy) and question vectors of dev, fresh-1 and fresh-2, each with the candidate's
  own recipe (its tokenizer, prefix and pooling; the heading path, a blank line and the
  text as today, cut at ``--pieces`` word pieces), stored where ``bench/semantic.py``
  keeps its vectors, so its ``Material`` (int8 codes, ``fusion.fuse``, the real packer)
  scores them. fresh-3 is never loaded here (the held-out set: ``report --held-out`` of
  ``bench/semantic.py`` scores it once, when the lead says the choice is final).
- ``quality``: MRR@10 / hit@5 / budget-hit@2000 per set at the shipped fusion
  (``fusion.FUSION``), the weight each model would choose on the pooled 118 questions, and
  the paired intervals against today's model.
- ``cost``: per candidate, in fresh processes: load time, ms per section on 1 and 2
  threads, ms per query (warm, median), resident memory, file size; a cold start (imports,
  load, one query embedded) as ``context resolve`` pays it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from . import quality, semantic, semantic_candidates, significance

BASELINE = "minilm-l6"
RESULTS = semantic.WORK / "models"
BATCH = 32


class BenchEmbedder:
    """A candidate run as ``embedding.model.Embedder`` runs today's model: onnxruntime on
    the CPU, texts batched by equal length (no padding, so a vector never depends on its
    batch), the candidate's pooling, then L2 normalization."""

    def __init__(self, c: semantic_candidates.Candidate, threads: int = 1,
                 optimization: str = "all") -> None:
        self.c = c
        self.threads = threads
        self.optimization = optimization
        self._session: Any = None
        self._tokenizer: Any = None
        self._table: dict[int, str] | None = None

    def load(self) -> None:
        if self._session is not None:
            return
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(self.c.tokenizer))
        self._tokenizer.no_padding()
        if self.c.normalizer is not None:
            raw = json.loads(self.c.normalizer.read_text())
            self._table = {int(k): v for k, v in raw.items()}
        options = ort.SessionOptions()
        options.graph_optimization_level = {
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
            "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}[self.optimization]
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(self.c.onnx.read_bytes(), sess_options=options,
                                             providers=["CPUExecutionProvider"])
        # the last hidden state: the first output of rank 3 (an export may put a pooled
        # output or an attention mask before it)
        self._output = next(o.name for o in self._session.get_outputs() if len(o.shape) == 3)

    def pieces(self, texts: Sequence[str], max_pieces: int, query: bool) -> list[list[int]]:
        self.load()
        prefix = self.c.query_prefix if query else self.c.passage_prefix
        texts = [prefix + t for t in texts]
        if self._table is not None:
            texts = [t.translate(self._table) for t in texts]
        self._tokenizer.enable_truncation(max_length=max_pieces)
        return [e.ids for e in self._tokenizer.encode_batch(texts, add_special_tokens=True)]

    def embed(self, texts: Sequence[str], max_pieces: int, query: bool = False) -> Any:
        import numpy as np

        ids = self.pieces(texts, max_pieces, query)
        out: Any = None
        by_length: dict[int, list[int]] = {}
        for i, row in enumerate(ids):
            by_length.setdefault(len(row), []).append(i)
        for length in sorted(by_length):
            rows = by_length[length]
            for start in range(0, len(rows), BATCH):
                chunk = rows[start:start + BATCH]
                got = self._run(np.array([ids[i] for i in chunk], dtype=np.int64))
                if out is None:
                    out = np.zeros((len(ids), got.shape[1]), dtype=np.float32)
                out[chunk] = got
        return out

    def _run(self, input_ids: Any) -> Any:
        import numpy as np

        feeds = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids),
                 "token_type_ids": np.zeros_like(input_ids)}
        wanted = {i.name for i in self._session.get_inputs()}
        hidden = self._session.run([self._output],
                                   {k: v for k, v in feeds.items() if k in wanted})[0]
        pooled = hidden[:, 0] if self.c.pooling == "cls" else hidden.mean(axis=1,
                                                                           dtype=np.float32)
        norm = np.sqrt((pooled * pooled).sum(axis=1, keepdims=True, dtype=np.float32))
        return pooled / np.maximum(norm, np.float32(1e-12))


# --- vectors, computed once per (candidate, pieces) ----------------------------------------
def _tag(name: str, pieces: int) -> str:
    return name if pieces == 64 else f"{name}@{pieces}"


def embed_corpora(c: semantic_candidates.Candidate, pieces: int,
                  corpora: dict[str, semantic.Loaded]) -> dict[str, float]:
    """Section vectors of each corpus, kept where ``semantic.section_vectors`` reads them;
    returns the seconds each corpus took (one thread)."""
    import numpy as np

    folder = semantic.VECTORS / f"{_tag(c.name, pieces)}-{pieces}"
    folder.mkdir(parents=True, exist_ok=True)
    e = BenchEmbedder(c)
    e.load()
    seconds = {}
    for name, loaded in corpora.items():
        meta = folder / f"{name}.json"
        if meta.exists() and json.loads(meta.read_text())["versions"] == loaded.versions:
            seconds[name] = json.loads(meta.read_text())["seconds"]
            continue
        started = time.perf_counter()
        vectors = e.embed(loaded.inputs, pieces)
        seconds[name] = round(time.perf_counter() - started, 2)
        np.save(folder / f"{name}.npy", vectors)
        meta.write_text(json.dumps({"versions": loaded.versions, "seconds": seconds[name],
                                    "load_average": os.getloadavg()[0]}))
        print(f"{c.name} ({pieces} pieces) {name}: {len(loaded.inputs)} sections in "
              f"{seconds[name]:.1f} s (load avg {os.getloadavg()[0]:.1f})", flush=True)
    return seconds


def embed_queries(c: semantic_candidates.Candidate, pieces: int, queries: list[str]) -> None:
    """Question vectors (cut at the product's QUERY_PIECES), where ``query_vectors`` reads."""
    import numpy as np

    from doc_index.embedding.model import QUERY_PIECES

    folder = semantic.VECTORS / f"{_tag(c.name, pieces)}-queries"
    folder.mkdir(parents=True, exist_ok=True)
    known = list(dict.fromkeys(queries))
    meta = folder / "queries.json"
    if meta.exists() and set(known) <= set(json.loads(meta.read_text())):
        return
    np.save(folder / "queries.npy", BenchEmbedder(c).embed(known, QUERY_PIECES, query=True))
    meta.write_text(json.dumps(known))


def dev_material() -> tuple[dict[str, Any], dict[str, semantic.Loaded]]:
    """The dev question sets (never fresh-3) and their five corpora, built once."""
    sets = semantic.question_sets(held_out=False)
    assert set(sets) == set(semantic.TUNING), sets.keys()
    folders = semantic.corpus_folders(sets)
    return sets, semantic.load_corpora(sorted(folders), folders)


def cmd_embed(args: argparse.Namespace) -> int:
    sets, corpora = dev_material()
    queries = [q["query"] for qs in sets.values() for q in qs]
    for c in semantic_candidates.candidates(only=set(args.models.split(","))).values():
        embed_corpora(c, args.pieces, corpora)
        embed_queries(c, args.pieces, queries)
    return 0



# --- quality, dev sets only -------------------------------------------------------------
def material_for(base: Any, model: str) -> Any:
    """``base`` (a ``semantic.Material`` of today's model) with another model's cosines: the
    lexical, shipped and BM25 rankings do not depend on the model, so they are reused."""
    import copy

    from doc_index.embedding import codes

    m = copy.copy(base)
    m.baseline_hits = base.baseline_hits
    name, _, pieces = model.partition("@")
    tag = _tag(name, int(pieces or 64))
    qvecs = semantic.query_vectors(tag, [q.query for q in base.questions])
    sections = {n: semantic._encoded(semantic.section_vectors(tag, int(pieces or 64), c,
                                                               make=False), "int8")
                for n, c in base.corpora.items()}
    m.cosines = [semantic._cosines(sections[q.corpus], qv, "int8", codes)
                 for q, qv in zip(base.questions, qvecs)]
    return m


def paired_rows(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"set": x["set"], "model": x["hybrid"], "today": y["hybrid"]} for x, y in zip(a, b)]


def score(m: Any, params: Any, base_rows: list[dict[str, Any]] | None
          ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Per set and pooled: MRR@10 / hit@5 / budget-hit@2000 (the real fuse and pack), the
    dense ranking alone, and the paired lead over today's model."""
    everything = range(len(m.questions))
    rows = semantic.rows_for(m, params, everything)
    out: dict[str, Any] = {"sets": semantic.per_set(rows, ["hybrid", "doc-index"]),
                           "pooled": semantic.metrics(rows, "hybrid"),
                           "dense_only": semantic.dense_only(m, everything)}
    if base_rows is not None:
        pairs = paired_rows(rows, base_rows)
        out["lead"] = {"pooled": significance.lead(pairs, "model", "today")}
        for name in semantic.TUNING:
            out["lead"][name] = significance.lead([r for r in pairs if r["set"] == name],
                                                  "model", "today")
    return out, rows


def best_weight(m: Any) -> tuple[float, float]:
    """The fusion weight this model would choose on the pooled dev questions (k, floor and
    the meaning-only rule as shipped), with its pooled MRR@10."""
    from doc_index.embedding.fusion import FUSION

    best = (FUSION.weight, -1.0)
    for w in semantic.WEIGHTS:
        got = semantic.mrr(semantic.rows_for(m, FUSION._replace(weight=w),
                                             range(len(m.questions)), budget=False))
        if got > best[1] + 1e-12:
            best = (w, got)
    return best[0], round(best[1], 4)


def cmd_quality(args: argparse.Namespace) -> int:
    from doc_index.embedding.fusion import FUSION

    sets, corpora = dev_material()
    base = semantic.Material(corpora, sets, BASELINE, 64)
    result: dict[str, Any] = {"params": semantic._label(FUSION), "models": {}}
    today, base_rows = score(base, FUSION, None)
    for model in [BASELINE] + [x for x in args.models.split(",") if x != BASELINE]:
        m = base if model == BASELINE else material_for(base, model)
        got, _ = score(m, FUSION, None if model == BASELINE else base_rows)
        w, pooled = best_weight(m)
        got["best_weight"] = {"weight": w, "pooled_mrr10": pooled}
        if w != FUSION.weight:
            got["at_best_weight"], _ = score(m, FUSION._replace(weight=w), base_rows)
        result["models"][model] = got
        print(format_model(model, got), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "quality.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"written to {out}")
    return 0


def format_model(model: str, got: dict[str, Any]) -> str:
    lines = [f"== {model}: pooled {got['pooled']}; dense alone {got['dense_only']}; "
             f"best weight {got['best_weight']}"]
    for name, v in got["sets"].items():
        h, lex = v["hybrid"], v["doc-index"]
        lines.append(f"  {name:<8} n={v['n']:<3} MRR {h['mrr10']:.3f} hit5 {h['hit5']:.2f} "
                     f"bhit {h['budget_hit']:.2f}   (lexical {lex['mrr10']:.3f} / "
                     f"{lex['hit5']:.2f} / {lex['budget_hit']:.2f})")
    for name, lead in got.get("lead", {}).items():
        lines.append(significance.format_lead(f"  {name} vs {BASELINE}", lead))
    return "\n".join(lines)



# --- cost, each figure in a fresh process -----------------------------------------------
REPEATS = 3
PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy, onnxruntime, tokenizers
from pathlib import Path
from bench.semantic_candidates import Candidate
from bench.semantic_models_eval import BenchEmbedder
job = json.loads(sys.stdin.read())
imports = time.perf_counter() - t0

def rss():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0

c = job["candidate"]
cand = Candidate(**{**c, "onnx": Path(c["onnx"]), "tokenizer": Path(c["tokenizer"]),
                    "normalizer": Path(c["normalizer"]) if c["normalizer"] else None})
base = rss()
e = BenchEmbedder(cand, threads=job["threads"])
t = time.perf_counter(); e.load(); load = time.perf_counter() - t
loaded = rss()
texts = job["texts"]
out = {"imports_s": imports, "load_s": load, "rss_base": base, "rss_loaded": loaded}
if job["kind"] == "cold":
    e.embed(texts[:1], 128, query=True)
    out["first_query_s"] = time.perf_counter() - t0
elif job["kind"] == "sections":
    e.embed(texts[:8], job["pieces"])
    t, c0 = time.perf_counter(), time.process_time()
    e.embed(texts, job["pieces"])
    out["ms_per_text"] = 1000 * (time.perf_counter() - t) / len(texts)
    out["cpu_ms_per_text"] = 1000 * (time.process_time() - c0) / len(texts)
elif job["kind"] == "pairs":  # a cross-encoder's work: K (query, section) pairs a query
    k, groups = job["k"], job["groups"]
    e.embed([q + " [SEP] " + t for q, t in groups[0][:k]], job["pieces"])
    wall, cpu = [], []
    for group in groups:
        t, c0 = time.perf_counter(), time.process_time()
        e.embed([q + " [SEP] " + t for q, t in group[:k]], job["pieces"])
        wall.append(time.perf_counter() - t); cpu.append(time.process_time() - c0)
    wall.sort(); cpu.sort()
    out["ms_per_text"] = 1000 * wall[len(wall) // 2]
    out["cpu_ms_per_text"] = 1000 * cpu[len(cpu) // 2]
else:
    e.embed(texts[:4], 128, query=True)
    wall, cpu = [], []
    for q in texts:
        t, c0 = time.perf_counter(), time.process_time()
        e.embed([q], 128, query=True)
        wall.append(time.perf_counter() - t); cpu.append(time.process_time() - c0)
    wall.sort(); cpu.sort()
    out["ms_per_text"] = 1000 * wall[len(wall) // 2]
    out["cpu_ms_per_text"] = 1000 * cpu[len(cpu) // 2]
out["rss_after"] = rss()
print(json.dumps(out))
"""


def probe(job: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PROBE], input=json.dumps(job),
                          capture_output=True, text=True, check=True, cwd=quality.REPO)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def median_of(job: dict[str, Any]) -> dict[str, Any]:
    runs = [probe(job) for _ in range(REPEATS)]
    out = {k: round(statistics.median(r[k] for r in runs), 4) for k in runs[0]}
    out["load_average"] = round(os.getloadavg()[0], 2)
    return out


def candidate_job(c: semantic_candidates.Candidate) -> dict[str, Any]:
    d = c._asdict()
    return {**d, "onnx": str(c.onnx), "tokenizer": str(c.tokenizer),
            "normalizer": str(c.normalizer) if c.normalizer else None}


def cost_of(c: semantic_candidates.Candidate, sections: list[str], queries: list[str],
            pieces: int) -> dict[str, Any]:
    job = {"candidate": candidate_job(c), "pieces": pieces}
    row: dict[str, Any] = {"bytes": c.onnx.stat().st_size,
                           "sha256": semantic_candidates.sha256(c.onnx)}
    for threads in (1, 2):
        row[f"sections_t{threads}"] = median_of(
            {**job, "threads": threads, "kind": "sections", "texts": sections})
    row["queries_t1"] = median_of({**job, "threads": 1, "kind": "queries", "texts": queries})
    row["cold"] = median_of({**job, "threads": 1, "kind": "cold", "texts": queries[:1]})
    meta = semantic.VECTORS / f"{_tag(c.name, pieces)}-{pieces}" / "fastapi-docs.json"
    if meta.exists():
        row["fastapi_corpus"] = {k: v for k, v in json.loads(meta.read_text()).items()
                                 if k != "versions"}
    return row


def format_cost(name: str, row: dict[str, Any]) -> str:
    s1, s2, q, cold = row["sections_t1"], row["sections_t2"], row["queries_t1"], row["cold"]
    mib = 2 ** 20
    return (f"{name:<16} {row['bytes'] / 1e6:6.1f} MB; load {s1['load_s']:.2f} s; ms/section "
            f"1 thread {s1['ms_per_text']:.1f} (cpu {s1['cpu_ms_per_text']:.1f}), 2 threads "
            f"{s2['ms_per_text']:.1f}; ms/query {q['ms_per_text']:.1f} (cpu "
            f"{q['cpu_ms_per_text']:.1f}); RSS loaded {q['rss_loaded'] / mib:.0f} MiB (+"
            f"{(q['rss_loaded'] - q['rss_base']) / mib:.0f}), after sections "
            f"{s1['rss_after'] / mib:.0f}; cold first query {cold['first_query_s']:.2f} s; "
            f"load avg {s1['load_average']}")


def cmd_cost(args: argparse.Namespace) -> int:
    fastapi = semantic.Loaded("fastapi-docs", quality.DEFAULT_CORPORA / "fastapi-docs")
    step = max(len(fastapi.inputs) // args.sample, 1)
    sections = fastapi.inputs[::step][:args.sample]
    queries = [q["query"] for q in semantic.question_sets(False)["dev"]]
    result: dict[str, Any] = {"cpus": os.cpu_count(), "sample": len(sections), "models": {}}
    for name, c in semantic_candidates.candidates(only=set(args.models.split(","))).items():
        result["models"][name] = cost_of(c, sections, queries, args.pieces)
        print(format_cost(name, result["models"][name]), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"cost-{args.pieces}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"written to {out}")
    return 0



def cmd_rerank_cost(args: argparse.Namespace) -> int:
    """What a cross-encoder over the top K would cost per query here. No cross-encoder
    can be had offline, but ms-marco-MiniLM-L-6-v2 is all-MiniLM-L6-v2's network (BERT,
    6 layers, 384 wide) with a 384 -> 1 head, so its forward pass over a (question,
    section) pair costs what ``minilm-l6``'s does over the joined text; ``minilm-l3``
    stands for the 2- and 4-layer ones (-L-2, -L-4: 2/3 and 4/3 of its cost)."""
    import random

    fastapi = semantic.Loaded("fastapi-docs", quality.DEFAULT_CORPORA / "fastapi-docs")
    queries = [q["query"] for q in semantic.question_sets(False)["dev"]][:10]
    rng = random.Random(30)
    groups = [[(q, t) for t in rng.sample(fastapi.inputs, 10)] for q in queries]
    result: dict[str, Any] = {}
    for name, c in semantic_candidates.candidates(only=set(args.models.split(","))).items():
        for pieces in (128, 256):
            for k in (5, 10):
                got = median_of({"candidate": candidate_job(c), "threads": 1, "kind": "pairs",
                                 "texts": [], "groups": groups, "k": k, "pieces": pieces})
                result[f"{name} k={k} pieces={pieces}"] = got
                print(f"{name:<10} K={k:<3} {pieces} pieces: {got['ms_per_text']:.1f} ms a "
                      f"query (cpu {got['cpu_ms_per_text']:.1f}); load avg "
                      f"{got['load_average']}", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "rerank-cost.json").write_text(json.dumps(result, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        p = sub.add_parser(name)
        p.add_argument("--models", default="minilm-l6,minilm-l3,me5-small,me5-small-enpt")
        p.add_argument("--pieces", type=int, default=64)
        p.add_argument("--sample", type=int, default=128, help="fastapi sections timed")
    args = parser.parse_args(argv)
    return COMMANDS[args.command](args)


COMMANDS = {"embed": cmd_embed, "quality": cmd_quality, "cost": cmd_cost,
            "rerank-cost": cmd_rerank_cost}

if __name__ == "__main__":
    sys.exit(main())
