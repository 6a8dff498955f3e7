"""Incremental reindex after ``git pull`` versus a full build.

Generates a repository with a history of >= 500 documentation files (Markdown and RST with
headings, paragraphs, lists and code), pushes it to a bare repository, and times whole
``doc-index build`` processes (wall clock, interpreter start included):

- git source: ``doc-index build file://.../docs.git`` (clone + full build), then the
  author changes 5 files and pushes, and the same command again (fetch + incremental);
- checkout: ``doc-index build <clone>``, then ``git pull`` changing 5 files and the same
  command again (what the installed hooks run).

Full builds are repeated in fresh roots and clone areas, incremental ones over several
pulls; the medians are reported. Goal: incremental <= 10% of full. (The first rebuild
after a full build copies its unchanged raw files; from the second on they are moved from
the cache's spare generation, ``store.raw_files``: the steady state of a checkout that
pulls, and what the median of 3 or more rounds shows.)

    python bench/git_pull.py [--workdir DIR] [--files 600] [--changed 5] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MAIN = Path(__file__).resolve().parents[1]

_WORDS = [
    "client", "server", "request", "response", "retry", "timeout", "backoff", "token",
    "session", "cache", "index", "section", "heading", "query", "budget", "stream", "chunk",
    "parser", "config", "option", "default", "value", "error", "exception", "handler",
    "callback", "webhook", "schema", "field", "record", "batch", "queue", "worker",
    "scheduler", "deploy", "release", "version", "upgrade", "migrate", "install", "build",
    "test", "fixture", "mock", "plugin", "hook", "router", "endpoint", "middleware", "auth",
    "credential", "permission", "scope", "tenant", "region", "replica", "shard", "partition",
    "latency", "throughput", "metric", "trace", "span", "log", "level", "format", "encoding",
]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 18))]
    return " ".join(words).capitalize() + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(2, 5)))


def markdown_page(rng: random.Random, title: str, revision: int = 0) -> str:
    out = [f"# {title}", "", _paragraph(rng), ""]
    for s in range(rng.randint(3, 6)):
        heading = f"## {rng.choice(_WORDS).title()} {rng.choice(_WORDS)} {s}"
        out += [heading, "", _paragraph(rng), ""]
        if rng.random() < 0.5:
            out += [f"- {_sentence(rng)}" for _ in range(3)] + [""]
        if rng.random() < 0.4:
            name = rng.choice(_WORDS)
            out += ["```python", f"def {name}_{s}(x):", f"    return x.{rng.choice(_WORDS)}()",
                    "```", ""]
        for t in range(rng.randint(0, 2)):
            out += [f"### {rng.choice(_WORDS).title()} {t}", "", _paragraph(rng), ""]
    if revision:
        out += [f"## Revision {revision}", "", _paragraph(rng), ""]
    return "\n".join(out)


def rst_page(rng: random.Random, title: str, revision: int = 0) -> str:
    out = [title, "=" * len(title), "", _paragraph(rng), ""]
    for s in range(rng.randint(3, 5)):
        heading = f"{rng.choice(_WORDS).title()} {s}"
        out += [heading, "-" * len(heading), "", _paragraph(rng), ""]
        if rng.random() < 0.4:
            out += [".. code-block:: python", "", f"   {rng.choice(_WORDS)}()", ""]
    if revision:
        heading = f"Revision {revision}"
        out += [heading, "-" * len(heading), "", _paragraph(rng), ""]
    return "\n".join(out)


def page_paths(count: int) -> list[str]:
    paths = []
    for i in range(count):
        area = ("guide", "reference", "howto", "api", "tutorial")[i % 5]
        ext = "rst" if i % 10 == 9 else "md"
        paths.append(f"docs/{area}/part{i // 50:02d}/page-{i:04d}.{ext}")
    return paths


def write_page(repo: Path, rel: str, seed: int, revision: int = 0) -> None:
    rng = random.Random(f"{rel}:{seed}:{revision}")
    title = Path(rel).stem.replace("-", " ").title()
    text = rst_page(rng, title, revision) if rel.endswith(".rst") else markdown_page(
        rng, title, revision)
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _git(cwd: Path, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def _timed_build(source: str, root: Path, env: dict[str, str]) -> tuple[float, str]:
    """Wall time of one whole ``doc-index build`` process, and its summary."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "doc_index.cli", "build", source, "--root",
                           str(root)], env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"doc-index build {source} failed: {done.stderr.strip()}")
    return seconds, done.stderr


def _files_line(summary: str) -> str:
    match = re.search(r"files: (.*)", summary)
    return match.group(1) if match else ""


def run(workdir: Path, files: int = 600, changed: int = 5, rounds: int = 3) -> dict[str, Any]:
    """Build the history under ``workdir``, time full and incremental builds, return the
    numbers (seconds are medians of ``rounds`` runs)."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update({
        "HOME": str(workdir / "home"), "XDG_CACHE_HOME": str(workdir / "xdg"),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com", "PYTHONPATH": str(MAIN),
    })
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "DOC_INDEX_ROOT"):
        env.pop(var, None)
    (workdir / "home").mkdir(exist_ok=True)

    # A history: the pages arrive over several commits, some get revised on the way.
    author = workdir / "author"
    author.mkdir()
    _git(author, "init", "-q", "-b", "main", env=env)
    paths = page_paths(files)
    batch = max(1, len(paths) // 5)
    for start in range(0, len(paths), batch):
        for rel in paths[start:start + batch]:
            write_page(author, rel, seed=1)
        for rel in paths[:start:37]:
            write_page(author, rel, seed=1, revision=start)
        _git(author, "add", "-A", env=env)
        _git(author, "commit", "-q", "-m", f"pages from {start}", env=env)
    bare = workdir / "srv" / "bench" / "docs.git"
    bare.parent.mkdir(parents=True)
    _git(workdir, "init", "-q", "--bare", "-b", "main", str(bare), env=env)
    _git(author, "push", "-q", str(bare), "main", env=env)
    checkout = workdir / "checkout"
    _git(workdir, "clone", "-q", str(bare), str(checkout), env=env)
    total_bytes = sum((author / p).stat().st_size for p in paths)

    url = bare.as_uri()
    git_full: list[float] = []
    local_full: list[float] = []
    for n in range(rounds):  # fresh root and clone area each time: clone + full build
        round_env = dict(env, XDG_CACHE_HOME=str(workdir / f"xdg-full-{n}"))
        seconds, summary_full = _timed_build(url, workdir / f"root-full-{n}", round_env)
        git_full.append(seconds)
        seconds, local_summary_full = _timed_build(str(checkout), workdir / f"root-lfull-{n}",
                                                   env)
        local_full.append(seconds)
    root = workdir / "root"
    local_root = workdir / "root-local"  # the checkout's cache has the URL's name (origin)
    _timed_build(url, root, env)
    _timed_build(str(checkout), local_root, env)

    rng = random.Random(42)
    git_incr: list[float] = []
    local_incr: list[float] = []
    pull_seconds: list[float] = []
    summary_incr = local_summary_incr = ""
    for n in range(rounds):
        for rel in rng.sample(paths, changed):
            write_page(author, rel, seed=1, revision=1000 + n)
        _git(author, "commit", "-q", "-am", f"change {changed} pages ({n})", env=env)
        _git(author, "push", "-q", str(bare), "main", env=env)
        seconds, summary_incr = _timed_build(url, root, env)
        git_incr.append(seconds)
        started = time.perf_counter()
        _git(checkout, "pull", "-q", "--ff-only", env=env)
        pull_seconds.append(time.perf_counter() - started)
        seconds, local_summary_incr = _timed_build(str(checkout), local_root, env)
        local_incr.append(seconds)

    full = statistics.median(git_full)
    incr = statistics.median(git_incr)
    lfull = statistics.median(local_full)
    lincr = statistics.median(local_incr)
    return {
        "doc_files": files,
        "doc_bytes": total_bytes,
        "changed_files": changed,
        "rounds": rounds,
        "git_full_seconds": round(full, 3),
        "git_incremental_seconds": round(incr, 3),
        "git_ratio": round(incr / full, 4),
        "git_full_files": _files_line(summary_full),
        "git_incremental_files": _files_line(summary_incr),
        "checkout_full_seconds": round(lfull, 3),
        "checkout_incremental_seconds": round(lincr, 3),
        "checkout_ratio": round(lincr / lfull, 4),
        "checkout_full_files": _files_line(local_summary_full),
        "checkout_incremental_files": _files_line(local_summary_incr),
        "git_pull_seconds": round(statistics.median(pull_seconds), 3),
        "goal_met": incr <= 0.10 * full and lincr <= 0.10 * lfull,
        "all_seconds": {"git_full": git_full, "git_incremental": git_incr,
                        "checkout_full": local_full, "checkout_incremental": local_incr},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where to build (default: a temporary directory, removed after)")
    parser.add_argument("--files", type=int, default=600)
    parser.add_argument("--changed", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.workdir is not None:
        result = run(args.workdir, args.files, args.changed, args.rounds)
    else:
        with tempfile.TemporaryDirectory(prefix="doc-index-bench-") as tmp:
            result = run(Path(tmp), args.files, args.changed, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['doc_files']} doc files ({result['doc_bytes'] / 1e6:.1f} MB), "
          f"{result['changed_files']} changed per pull, median of {result['rounds']} runs, "
          "wall time of whole `doc-index build` processes")
    for kind, label in (("git", "git source (file:// URL, fetch)"),
                        ("checkout", "checkout (after git pull)")):
        full, incr = result[f"{kind}_full_seconds"], result[f"{kind}_incremental_seconds"]
        print(f"{label}:")
        print(f"  full build:         {full:7.3f} s   [{result[f'{kind}_full_files']}]")
        print(f"  incremental build:  {incr:7.3f} s   [{result[f'{kind}_incremental_files']}]")
        print(f"  ratio:              {100 * result[f'{kind}_ratio']:6.1f} %  (goal <= 10 %)")
    print(f"git pull itself: {result['git_pull_seconds']:.3f} s; "
          f"goal met: {'yes' if result['goal_met'] else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
