"""Build speed: whole ``doc-index build`` processes, full, no change, one file changed and
the same docs under a second name.

For each corpus and each repetition: a fresh cache root, a full build (the first build of
the directory), the same command again with nothing changed, then one typical page gets a
paragraph appended and the command runs a third time; a fourth builds the same directory
under a second ``--name`` (a new cache that parses nothing the root's parse cache holds).
Each figure is the wall time from spawn to exit (interpreter start included, what a user
or a git hook waits for), with the CPU time and peak RSS of the process and its parse
workers from the kernel's rusage. The ratios (no change / full, one changed / full,
second name / full) are taken inside each repetition.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

from .corpora import Corpus
from .memory import ProcessRun, run_measured, tool_argv
from .stats import Summary

_SECTIONS = re.compile(rb"sections: (\d+)")
_FILES = re.compile(rb"files: ([^\n]*)")
_TIME = re.compile(rb"time: ([0-9.]+) s")
KINDS = ("full", "nochange", "onechange", "secondname")


def _summary_fields(run: ProcessRun) -> dict[str, Any]:
    sections = _SECTIONS.search(run.stderr)
    files = _FILES.search(run.stderr)
    inner = _TIME.search(run.stderr)
    return {
        "sections": int(sections.group(1)) if sections else None,
        "files": files.group(1).decode() if files else "",
        "reported_s": float(inner.group(1)) if inner else None,
    }


def edit_page(path: Path, rep: int) -> None:
    """Append a paragraph (valid Markdown and RST) so the file's hash changes."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"\n\nBenchmark edit {rep}: a new paragraph about retries, timeouts and the "
                 f"request budget, appended to change this page.\n")


def measure_corpus(corpus: Corpus, roots: Path, repeats: int,
                   keep_root: Path | None = None) -> dict[str, Any]:
    """``repeats`` rounds of full / no-change / one-changed builds of ``corpus``.

    The last round's cache stays in ``keep_root`` (for the resolve benchmarks); the other
    rounds' roots are deleted."""
    build = [*tool_argv("doc-index", "doc_index.cli"), "build", str(corpus.source), "--root"]
    runs: dict[str, list[ProcessRun]] = {k: [] for k in KINDS}
    details: dict[str, dict[str, Any]] = {}
    for rep in range(repeats):
        last = rep == repeats - 1
        root = keep_root if (last and keep_root is not None) else roots / f"{corpus.name}-{rep}"
        _forget(root, corpus.key)
        argv = [*build, str(root), "--name", corpus.key]  # the name the benchmarks read
        runs["full"].append(run_measured(argv, sample_tree=True))
        runs["nochange"].append(run_measured(argv, sample_tree=True))
        edit_page(corpus.source / corpus.change_file, rep)
        runs["onechange"].append(run_measured(argv, sample_tree=True))
        runs["secondname"].append(run_measured([*argv, "--name", SECOND_NAME],
                                               sample_tree=True))
        shutil.rmtree(root / SECOND_NAME)  # --name is the exact name
        if not last:
            shutil.rmtree(root)
        print(f"  build {corpus.name} rep {rep + 1}/{repeats}: "
              + ", ".join(f"{k} {runs[k][-1].wall_s:.2f} s" for k in KINDS),
              file=sys.stderr, flush=True)
    for kind in KINDS:
        details[kind] = _summary_fields(runs[kind][-1])
    result: dict[str, Any] = {"corpus": corpus.name, "repeats": repeats, "details": details}
    for kind in KINDS:
        rs = runs[kind]
        result[kind] = {
            "wall_s": Summary.of(r.wall_s for r in rs).as_dict(),
            "cpu_s": Summary.of(r.cpu_s for r in rs).as_dict(),
            "peak_rss_mb": Summary.of(r.peak_rss_bytes / 2**20 for r in rs).as_dict(),
            "tree_rss_mb": Summary.of((r.tree_rss_bytes or 0) / 2**20 for r in rs).as_dict(),
        }
        reported = [_reported_s(r) for r in rs]
        if all(v is not None for v in reported):
            result[kind]["reported_s"] = Summary.of(v for v in reported if v is not None).as_dict()
    full = [r.wall_s for r in runs["full"]]
    result["ratios"] = {
        "nochange_vs_full": Summary.of(
            r.wall_s / f for r, f in zip(runs["nochange"], full)).as_dict(),
        "onechange_vs_full": Summary.of(
            r.wall_s / f for r, f in zip(runs["onechange"], full)).as_dict(),
        "secondname_vs_full": Summary.of(
            r.wall_s / f for r, f in zip(runs["secondname"], full)).as_dict(),
    }
    parsed = root / STORE_AREA / STORE_AREA / "parsed"
    packs = {(st := p.stat()).st_ino: st.st_size  # entries are links to shared packs
             for p in parsed.iterdir()} if parsed.is_dir() else {}
    result["parse_cache_mb"] = round(sum(packs.values()) / 2**20, 1)
    return result


SECOND_NAME = "bench-second-name"
STORE_AREA = ".doc-index-tmp"  # store.cache_names.STAGING_DIR: spares and the parse cache


def _forget(root: Path, key: str) -> None:
    """Remove one cache from ``root``, leaving the other caches there (a cache's lock is
    gone once its build is done), and the store's area: a full build parses everything."""
    shutil.rmtree(root / key, ignore_errors=True)
    shutil.rmtree(root / STORE_AREA, ignore_errors=True)


def _reported_s(run: ProcessRun) -> float | None:
    """The seconds the build printed itself (from its start to its summary)."""
    m = _TIME.search(run.stderr)
    return float(m.group(1)) if m else None


STARTUP_PROBES = {
    "python": "pass",
    "import_build": "import doc_index.cli, doc_index.cli.build_command",
    "import_resolve": ("import doc_index.server.context_cli, doc_index.search.tools, "
                       "doc_index.store.native_cache, doc_index.search.native_selection"),
    "import_mcp_sdk": ("import anyio, doc_index.server.mcp_server, "
                       "doc_index.server.mcp_transport, mcp.server.lowlevel"),
}


def interpreter_start(repeats: int) -> dict[str, Any]:
    """Wall time of ``python -c pass`` and of ``python -c 'import ...'`` for the modules
    each command needs, with this interpreter, in the same run: the floor of every
    cold-process figure, and how much of it is imports."""
    out: dict[str, Any] = {}
    for name, code in STARTUP_PROBES.items():
        n = max(2, repeats // 3) if name == "import_mcp_sdk" else repeats
        run_measured([sys.executable, "-c", code])  # warm-up: bytecode, page cache
        runs = [run_measured([sys.executable, "-c", code]) for _ in range(n)]
        out[name] = {"wall_s": Summary.of(r.wall_s for r in runs).as_dict(),
                     "cpu_s": Summary.of(r.cpu_s for r in runs).as_dict()}
    out["wall_s"] = out["python"]["wall_s"]  # the bare interpreter, for the ratios
    return out
