"""``doc-index sync`` of a 20-dependency project against a local index (issue 23).

A PEP 503/691 index on 127.0.0.1 (``tests/package_servers.SimpleIndex``) serves generated
sdists (each: a README, a ``docs/`` folder of Markdown pages, a package of modules); the
project pins them in ``requirements.txt``. Whole ``doc-index sync`` processes are timed
(wall clock, interpreter start included), each in a fresh root for the first sync:

- ``plan``: ``sync --dry-run`` of the empty root (lockfile read, no network);
- ``first``: every package fetched, verified, read and built;
- ``unchanged``: every pin already cached (kept, no index request);
- ``one_changed``: one pin moved to a new version (one build beside the old cache).

Lexical (``DOC_INDEX_SEMANTIC=off``) unless ``--meaning``: then the semantic extra's
model embeds what each sync built, and each package's ``docs/`` holds real documentation
(every page of the eight bench corpora, dealt out in turn: 20 packages of about 460 pages
and 6,600 sections in all), in a fresh root and vector store per round, so the first sync
embeds every section.

    python -m bench.package_sync [--packages 20] [--rounds 3] [--meaning] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MAIN = Path(__file__).resolve().parents[1]
PAGES = 10
MODULES = 5


def _sdist(name: str, version: str) -> bytes:
    sys.path.insert(0, str(MAIN / "tests"))
    from package_servers import sdist

    files: dict[str, bytes | str] = {"README.md": f"# {name}\n\n{name} {version} does things.\n"}
    for page in range(PAGES):
        files[f"docs/page{page}.md"] = (f"# {name} page {page}\n\n## Options\n\nThe option "
                                        f"number {page} of {name} sets the retry budget.\n")
    files[f"src/{name}/__init__.py"] = f'"""{name}."""\n'
    for module in range(MODULES):
        files[f"src/{name}/mod{module}.py"] = f'"""Module {module}."""\n\ndef f():\n    """F."""\n'
    return sdist(name, version, files)


def real_pages(packages: int) -> list[dict[str, bytes | str]]:
    """Every documentation page of the bench corpora (the shared five and bench/corpora's
    three), dealt out in turn to ``packages`` packages (``docs/<corpus>/<path>``)."""
    from .corpora import DOC_SUFFIXES, SHARED_CORPORA

    folders = sorted(p for base in (SHARED_CORPORA, MAIN / "bench" / "corpora")
                     for p in base.iterdir() if p.is_dir())
    pages = [(folder.name, path) for folder in folders for path in sorted(folder.rglob("*"))
             if path.is_file() and path.suffix in DOC_SUFFIXES]
    out: list[dict[str, bytes | str]] = [{} for _ in range(packages)]
    for n, (corpus, path) in enumerate(pages):
        rel = path.relative_to(next(f for f in folders if f.name == corpus)).as_posix()
        out[n % packages][f"docs/{corpus}/{rel}"] = path.read_bytes()
    return out


def _real_sdist(name: str, version: str, pages: dict[str, bytes | str]) -> bytes:
    sys.path.insert(0, str(MAIN / "tests"))
    from package_servers import sdist

    files = {"README.md": f"# {name}\n\n{name} {version}.\n", **pages,
             f"src/{name}/__init__.py": f'"""{name}."""\n'}
    return sdist(name, version, files)


def _env(home: Path, index_url: str, meaning: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith(("PIP_", "UV_", "NPM_CONFIG_", "DOC_INDEX_"))}
    env.update({"HOME": str(home), "XDG_CACHE_HOME": str(home / "xdg"),
                "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": index_url,
                "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
                "no_proxy": "127.0.0.1,localhost",
                # meaning: the model the semantic extra installs, found on its own
                "DOC_INDEX_SEMANTIC": "" if meaning else "off"})
    return env


def _sync(project: Path, root: Path, env: dict[str, str], *more: str,
          lines: list[str] | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "doc_index.cli", "sync", str(project),
                           "--root", str(root), *more], env=env, capture_output=True,
                          check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"sync failed: {done.stdout.decode()} {done.stderr.decode()}")
    if lines is not None:
        lines += [x for x in done.stdout.decode().splitlines() if x.startswith("meaning:")]
    return seconds


def run(work: Path, packages: int = 20, rounds: int = 3,
        meaning: bool = False) -> dict[str, Any]:
    """The medians of ``rounds`` runs of each step (seconds) and what was built."""
    sys.path.insert(0, str(MAIN / "tests"))
    from package_servers import SimpleIndex

    work.mkdir(parents=True, exist_ok=True)
    names = [f"dep{i:02d}" for i in range(packages)]
    times: dict[str, list[float]] = {"plan": [], "first": [], "unchanged": [],
                                     "one_changed": []}
    archive_bytes = 0
    lines: list[str] = []
    dealt = real_pages(packages) if meaning else []
    with SimpleIndex() as index:
        for i, name in enumerate(names):
            for version in ("1.0.0", "1.1.0"):
                data = (_real_sdist(name, version, dealt[i]) if meaning
                        else _sdist(name, version))
                archive_bytes += len(data) if version == "1.0.0" else 0
                index.add(name, f"{name}-{version}.tar.gz", data)
        env = _env(work / "home", index.index_url, meaning)
        for n in range(rounds):
            project = work / f"project{n}"
            project.mkdir()
            pins = {name: "1.0.0" for name in names}
            (project / "requirements.txt").write_text(
                "".join(f"{k}=={v}\n" for k, v in pins.items()))
            root = work / f"root{n}"
            times["plan"].append(_sync(project, root, env, "--dry-run"))
            times["first"].append(_sync(project, root, env, lines=lines))
            requests = len(index.requests)
            times["unchanged"].append(_sync(project, root, env, lines=lines))
            assert len(index.requests) == requests, "an unchanged sync asked the index"
            pins[names[0]] = "1.1.0"
            (project / "requirements.txt").write_text(
                "".join(f"{k}=={v}\n" for k, v in pins.items()))
            times["one_changed"].append(_sync(project, root, env, lines=lines))
    pages = [len(d) for d in dealt] if meaning else [PAGES + 1] * packages
    return {"packages": packages, "rounds": rounds, "meaning": meaning,
            "pages_per_package": statistics.median(pages), "pages": sum(pages),
            "modules_per_package": 1 if meaning else MODULES, "archive_bytes": archive_bytes,
            **{f"{step}_seconds": statistics.median(values) for step, values in times.items()},
            "first_per_package_seconds": statistics.median(times["first"]) / packages,
            "all_seconds": times, "meaning_lines": lines,
            "load_average": list(os.getloadavg())}


def render(result: dict[str, Any]) -> str:
    """The report's paragraph and table."""
    rows = [("`sync --dry-run` (the plan)", result["plan_seconds"]),
            ("first sync (every package built)", result["first_seconds"]),
            ("unchanged pins (all kept, no index request)", result["unchanged_seconds"]),
            ("one pin changed (one build)", result["one_changed_seconds"])]
    what = ("with the semantic extra (every section embedded: real documentation, the "
            "pages of the eight bench corpora dealt out)" if result.get("meaning") else
            "lexical")
    lines = [f"**`doc-index sync`** of a {result['packages']}-dependency project "
             f"(`requirements.txt`) against a PEP 691 index on 127.0.0.1, {what}, each sdist "
             f"{result['pages_per_package']:g} pages and {result['modules_per_package']} "
             f"modules ({result['archive_bytes'] / 1e3:.0f} kB of archives in all), median of "
             f"{result['rounds']} runs, whole processes (`bench/package_sync.py`):", "",
             "| step | s |", "|:--|--:|"]
    lines += [f"| {label} | {value:.2f} |" for label, value in rows]
    lines.append("")
    lines.append(f"Per package, first sync: {result['first_per_package_seconds']:.3f} s.")
    if result.get("meaning_lines"):
        first, again = result["meaning_lines"][:2]
        load = result.get("load_average") or [0.0]
        lines.append(f"The summaries' lines: first sync `{first}`; unchanged `{again}` "
                     f"(load average {load[0]:.1f}). Targets (issue 30): first <= 300 s, "
                     "unchanged <= 2 s.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packages", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--meaning", action="store_true",
                        help="real docs, embedded by the semantic extra's model")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result = run(Path(tmp), args.packages, args.rounds, args.meaning)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
