"""Hostile file shapes: what one file of each shape costs a whole ``doc-index build``.

Issue 21's shapes, each written as one file of a given size into its own folder and
built by a real ``doc-index build`` process (:func:`bench.memory.run_measured`, with the
process tree's RSS sampled): wall and CPU time, the largest process (``ru_maxrss``), the
largest sum over the tree, that sum per input byte, what the build made of the file
(sections, a note, or the skip reason), and one cold ``doc-index resolve`` process on the
cache. Targets: a file up to the default size cap (10 MB) builds in at most 60 s and
1 GiB of the whole build, or is skipped with a reason; a cold resolve takes at most 5 s.

    python -m bench.memory_shapes                    # every shape at 1 MB and 10 MB
    python -m bench.memory_shapes --sizes 1e6 --shapes flat-md,fields-rst

Each build runs with an address-space limit of ``SAFETY_LIMIT`` per process, a net for
the machine (the builds stay far below it).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .corpora import WORK
from .memory import run_measured, tool_argv

SAFETY_LIMIT = 4 << 30
QUERY = "h4999 item term w1 q0001234z title heading"


def _title(n: int) -> str:
    """Finding 1: one heading of n/9 distinct words over n/90 subsections."""
    words = max(1, n // 9)
    head = "# " + " ".join(f"w{i}" for i in range(words)) + "\n\n"
    return head + "".join(f"## s{i}\n\nx\n\n" for i in range(words // 10))


def _lines(n: int, line: Callable[[int], str]) -> str:
    out: list[str] = []
    size = i = 0
    while size < n:
        text = line(i)
        out.append(text)
        size += len(text)
        i += 1
    return "".join(out)


def _words(n: int) -> str:
    """Distinct words in 5,000 sections: a term each, two million in 10 MB."""
    per = max(1, n // 5000 // 10)
    return "".join(f"# s{s}\n\n" + " ".join(f"q{s * per + k:07d}z" for k in range(per))
                   + "\n\n" for s in range(5000))


RST_TOP = "Title\n=====\n\n"  # a title line, so that docutils is run on the file
SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "title-md": ("md", _title),
    "flat-md": ("md", lambda n: "a\n\n" * (n // 3) + "# End\n"),
    "quotes-md": ("md", lambda n: _lines(n, lambda i: ">" * (i % 20) + " x\n# h\n")),
    # one block quote around everything, nested 20 deep: a top-level block the window
    # grows to hold, up to its cap
    "one-quote-md": ("md", lambda n: _lines(n, lambda i: ">" * (1 + i % 20) + " x\n> # h\n")),
    "fields-rst": ("rst", lambda n: RST_TOP + _lines(n, lambda i: f":f{i}: v\n")),
    "enum-rst": ("rst", lambda n: RST_TOP + _lines(n, lambda i: "#. item\n")),
    "deflist-rst": ("rst", lambda n: RST_TOP + _lines(n, lambda i: f"term{i}\n   def\n")),
    "transitions-rst": ("rst", lambda n: RST_TOP + _lines(n, lambda i: "para\n\n----\n\n")),
    "nesting-rst": ("rst", lambda n: RST_TOP + _lines(n, lambda i: " " * (i % 160) + "x\n\n")),
    "headings-md": ("md", lambda n: _lines(n, lambda i: f"# h{i}\n")),
    "words-md": ("md", _words),
}
FULL_SIZES = (1_000_000, 10_000_000)
QUICK_SIZES = (250_000,)


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (SAFETY_LIMIT, SAFETY_LIMIT))


def measure(shape: str, size: int, work: Path) -> dict[str, Any]:
    """Build one file of ``shape`` and ``size`` bytes alone; its costs and outcome."""
    ext, make = SHAPES[shape]
    folder = work / f"{shape}-{size}"
    shutil.rmtree(folder, ignore_errors=True)
    source = folder / "src"
    source.mkdir(parents=True)
    data = make(size).encode()
    (source / f"shape.{ext}").write_bytes(data)
    root = folder / "root"
    env = {"PATH": "/usr/bin:/bin", "DOC_INDEX_PARSE_CACHE_MB": "0"}
    run = run_measured([*tool_argv("doc-index", "doc_index.cli"), "build", str(source),
                        "--root", str(root), "--name", "x"],
                       env=env, sample_tree=True, check=False, preexec=_limit_memory)
    err = run.stderr.decode("utf-8", "replace")
    result: dict[str, Any] = {
        "bytes": len(data), "returncode": run.returncode, "wall_s": round(run.wall_s, 2),
        "cpu_s": round(run.cpu_s, 2), "peak_rss_mb": round(run.peak_rss_bytes / 2**20, 1),
        "tree_rss_mb": round((run.tree_rss_bytes or 0) / 2**20, 1),
        "tree_bytes_per_byte": round((run.tree_rss_bytes or 0) / len(data), 1),
        "sections": _count(r"sections: (\d+)", err),
        "skipped": _found(r"skipped shape\.\w+: (.*)", err),
        "note": _found(r"note shape\.\w+: (.*)", err),
        "error": _found(r"error: (.*)", err),
    }
    if run.returncode == 0 and (root / "x" / "manifest.json").is_file():
        resolve = run_measured([*tool_argv("doc-index", "doc_index.cli"), "resolve", "x",
                                QUERY, "--budget", "2000", "--root", str(root)],
                               env=env, check=False, preexec=_limit_memory)
        result["resolve_s"] = round(resolve.wall_s, 2)
        result["resolve_rss_mb"] = round(resolve.peak_rss_bytes / 2**20, 1)
        result["resolve_returncode"] = resolve.returncode
    shutil.rmtree(folder, ignore_errors=True)
    return result


def _found(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text)
    return match.group(1).strip() if match else None


def _count(pattern: str, text: str) -> int | None:
    found = _found(pattern, text)
    return int(found) if found is not None else None


def run(sizes: tuple[int, ...], work: Path, shapes: list[str] | None = None,
        log: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Every shape at every size, one build at a time."""
    out: dict[str, Any] = {"sizes": list(sizes), "shapes": {}}
    for shape in shapes or list(SHAPES):
        out["shapes"][shape] = {}
        for size in sizes:
            log(f"shapes: {shape} at {size / 1e6:g} MB")
            out["shapes"][shape][str(size)] = measure(shape, size, work)
    return out


def rows(results: dict[str, Any]) -> list[tuple[str, ...]]:
    """One table row per shape and size (for the report and the command line)."""
    table = []
    for shape, by_size in results["shapes"].items():
        for size, r in by_size.items():
            made = (f"skipped: {r['skipped']}" if r["skipped"] else
                    f"error: {r['error']}" if r["error"] else f"{r['sections']} sections")
            if r["note"]:
                made += " (capped)"
            table.append((shape, f"{int(size) / 1e6:g}", f"{r['wall_s']:.1f}", f"{r['cpu_s']:.1f}",
                          f"{r['peak_rss_mb']:.0f}", f"{r['tree_rss_mb']:.0f}",
                          f"{r['tree_bytes_per_byte']:.0f}",
                          f"{r['resolve_s']:.2f}" if "resolve_s" in r else "n/a", made))
    return table


HEAD = ("shape", "MB", "build s", "CPU s", "peak RSS MiB", "tree sum MiB", "bytes/byte",
        "cold resolve s", "outcome")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in FULL_SIZES),
                        help="comma-separated file sizes in bytes (1e6 style allowed)")
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help=f"comma-separated, of: {', '.join(SHAPES)}")
    parser.add_argument("--work", type=Path, default=WORK / "shapes")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    sizes = tuple(int(float(s)) for s in args.sizes.split(","))
    results = run(sizes, args.work, args.shapes.split(","),
                  lambda m: print(m, file=sys.stderr, flush=True))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(" | ".join(HEAD))
    for row in rows(results):
        print(" | ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
