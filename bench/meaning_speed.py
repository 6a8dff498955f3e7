"""Answers by meaning, issue 30's speed targets, measured as a user runs the commands.

- ``embed``: fastapi-docs (2,082 sections) through ``doc-index build`` in a fresh root, so
  every section is embedded, with ``DOC_INDEX_EMBED_THREADS=1`` (one section at a time:
  what issue 25 shipped on a 2-core machine) and with the default (one run per core, side
  by side on one session), alternating, ``rounds`` each: the whole process's wall and CPU
  time (user + system), the summary's ``meaning:`` line, the load average at each run.
  The ratio of the medians is the speed-up measured in one run. With
  ``bench/work/semantic/models/dynamic.onnx`` present (``bench.semantic_models``: a
  dynamic int8 export, the stand-in for the publisher's ``model_quint8_avx2.onnx`` users
  fetch), the default is measured with it too (its sha256 trusted by a launcher).
- ``sync``: ``bench.package_sync --meaning``: 20 dependencies of real documentation,
  first sync (everything embedded) and a second (nothing to do).
- ``latency`` and ``cold``: ``bench.semantic_e2e``'s steps (warm in-process resolve,
  lexical and by meaning; a ``context resolve`` process), on the cache ``embed`` built.

    python -m bench.meaning_speed [embed sync latency cold] [--rounds 2] [--quick]

Targets (issue 30, a quiet 2-core machine): embed <= 15 s; first sync <= 300 s, second
<= 2 s; warm resolve by meaning <= +20 ms p50; cold ``context resolve`` <= 0.6 s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .corpora import SHARED_CORPORA, WORK
from .memory import tool_argv

CORPUS = "fastapi-docs"
E2E = WORK / "semantic-e2e"  # bench.semantic_e2e's latency and cold steps read it
DYNAMIC = WORK / "semantic" / "models" / "dynamic.onnx"
TARGETS = {"embed_fastapi_s": 15.0, "first_sync_s": 300.0, "second_sync_s": 2.0,
           "added_warm_p50_ms": 20.0, "cold_resolve_s": 0.6}
# doc-index with one more trusted model file (the bench's dynamic stand-in): argv[1] is
# its sha256, the rest doc-index's arguments.
TRUSTING = ("import sys; from doc_index.embedding import model as M; "
            "M.KNOWN_MODELS[sys.argv.pop(1)] = M.KnownModel('bench: dynamic int8 stand-in', "
            "None); sys.argv[0] = 'doc-index'; from doc_index.cli.command import run; run()")


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOC_INDEX_")}
    env.update({"DOC_INDEX_SEMANTIC": ""})
    env.update(extra)
    return env


def timed(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One whole process: wall and CPU seconds (its own and its children's), stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "stderr": done.stderr,
            "load_average": os.getloadavg()[0]}


def _meaning_line(stderr: str) -> str:
    return next((x.strip() for x in stderr.splitlines() if "meaning:" in x), "")


def build_once(label: str, extra: dict[str, str], model: str | None = None) -> dict[str, Any]:
    """fastapi-docs built in a fresh root (nothing to reuse): the process's times."""
    with tempfile.TemporaryDirectory(prefix="doc-index-embed-") as tmp:
        argv = [*tool_argv("doc-index", "doc_index.cli")]
        env = _env(extra)
        if model is not None:
            sha = hashlib.sha256(Path(model).read_bytes()).hexdigest()
            argv = [sys.executable, "-c", TRUSTING, sha]
            env["DOC_INDEX_MODEL_DIR"] = str(Path(tmp) / "model")
            (Path(tmp) / "model").mkdir()
            os.symlink(model, Path(tmp) / "model" / "model_quint8_avx2.onnx")
        run = timed([*argv, "build", str(SHARED_CORPORA / CORPUS), "--root",
                     str(Path(tmp) / "root"), "--name", CORPUS], env)
    from .semantic_e2e import meaning

    line = _meaning_line(run.pop("stderr"))
    print(f"  {label}: {run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU ({line}); load "
          f"{run['load_average']:.1f}", file=sys.stderr, flush=True)
    return {**run, "line": line, "embed_s": meaning(line).get("seconds", float("nan"))}


def step_embed(rounds: int) -> dict[str, Any]:
    variants: dict[str, tuple[dict[str, str], str | None]] = {
        "one thread": ({"DOC_INDEX_EMBED_THREADS": "1"}, None),
        "default": ({}, None),
    }
    if DYNAMIC.is_file():
        variants["default, dynamic int8 stand-in"] = ({}, str(DYNAMIC))
    lexical = build_once("lexical", {"DOC_INDEX_SEMANTIC": "off"})
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in variants}
    for _ in range(rounds):
        for label, (extra, model) in variants.items():
            runs[label].append(build_once(label, extra, model))
    out: dict[str, Any] = {"corpus": CORPUS, "rounds": rounds, "cores": os.cpu_count(),
                           "lexical_build_s": lexical["wall_s"], "runs": runs}
    for label, got in runs.items():
        out[label] = {key: statistics.median(r[key] for r in got)
                      for key in ("wall_s", "cpu_s", "load_average", "embed_s")}
    out["speedup"] = out["one thread"]["wall_s"] / out["default"]["wall_s"]
    return out


def step_sync(rounds: int) -> dict[str, Any]:
    from . import package_sync

    with tempfile.TemporaryDirectory(prefix="doc-index-sync-meaning-") as tmp:
        return package_sync.run(Path(tmp), packages=20, rounds=rounds, meaning=True)


def _prepare_e2e_cache() -> None:
    """The fastapi-docs cache with vectors that ``semantic_e2e``'s latency and cold steps
    read (built once, then reused)."""
    root = E2E / "embed" / "root"
    if (root / CORPUS / "vectors.bin").is_file():
        return
    shutil.rmtree(E2E / "embed", ignore_errors=True)
    subprocess.run([*tool_argv("doc-index", "doc_index.cli"), "build",
                    str(SHARED_CORPORA / CORPUS), "--root", str(root), "--name", CORPUS],
                   env=_env({}), check=True, capture_output=True)


def step_latency(quick: bool) -> dict[str, Any]:
    from . import semantic_e2e

    _prepare_e2e_cache()
    return semantic_e2e.step_latency(semantic_e2e.default_model(), quick)


def step_cold(quick: bool) -> dict[str, Any]:
    from . import semantic_e2e

    _prepare_e2e_cache()
    return semantic_e2e.step_cold(semantic_e2e.default_model(), quick)


def run(steps: list[str], rounds: int, quick: bool) -> dict[str, Any]:
    results: dict[str, Any] = {"targets": TARGETS, "load_average_start": os.getloadavg()}
    for step in steps:
        print(f"meaning_speed: {step} ...", file=sys.stderr, flush=True)
        if step == "embed":
            results[step] = step_embed(rounds)
        elif step == "sync":
            results[step] = step_sync(1 if quick else rounds)
        elif step == "latency":
            results[step] = step_latency(quick)
        else:
            results[step] = step_cold(quick)
        results[step]["load_average_end"] = os.getloadavg()
    return results


def render(result: dict[str, Any]) -> str:
    """The report's paragraph on issue 30's speed targets."""
    rows = []
    embed = result.get("embed")
    if embed:
        for label in embed["runs"]:
            e = embed[label]
            rows.append((f"`doc-index build` {CORPUS}, embedding {label}: the whole process",
                         f"{e['wall_s']:.1f} s (CPU {e['cpu_s']:.1f} s, load "
                         f"{e['load_average']:.1f}); embedding "
                         f"{e.get('embed_s', float('nan')):.1f} s",
                         "embedding <= 15 s" if label == "default" else ""))
        rows.append(("the same, lexical (`DOC_INDEX_SEMANTIC=off`)",
                     f"{embed['lexical_build_s']:.1f} s", ""))
    sync = result.get("sync")
    if sync:
        rows.append(("first `sync` of 20 dependencies, with meaning",
                     f"{sync['first_seconds']:.1f} s", "<= 300 s"))
        rows.append(("second `sync` (nothing changed)", f"{sync['unchanged_seconds']:.2f} s",
                     "<= 2 s"))
    lat = result.get("latency")
    if lat:
        rows.append(("warm resolve, added by meaning, p50 (fastapi-docs, in-process)",
                     f"+{lat['added_ms']['median']:.1f} ms (lexical "
                     f"{lat['lexical_ms']['median']:.1f}, by meaning "
                     f"{lat['meaning_ms']['median']:.1f})", "<= +20 ms"))
    cold = result.get("cold")
    if cold:
        rows.append(("cold `context resolve` with meaning, median",
                     f"{cold['with_meaning']['median_s']:.2f} s (lexical "
                     f"{cold['lexical']['median_s']:.2f} s)", "<= 0.6 s"))
    lines = ["**Answers by meaning, speed** (`bench/meaning_speed.py`, issue 30; the model "
             "the semantic extra installs; whole processes as a user runs them; the load "
             "average beside each, since the 2 cores are shared):", "",
             "| what | measured | target |", "|:--|:--|:--|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    if embed:
        lines += ["", f"Embedding side by side against one thread, same run: "
                      f"{embed['speedup']:.2f}x faster."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.meaning_speed")
    steps = ["embed", "sync", "latency", "cold"]
    parser.add_argument("steps", nargs="*", choices=[*steps, []], default=steps)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    result = run(args.steps, args.rounds, args.quick)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
