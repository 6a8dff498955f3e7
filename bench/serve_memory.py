"""Memory of a warm ``doc-index serve`` holding several large caches, and its latency.

The issue 15 scenario: the 30 MB corpus (fastapi-docs x20) built under 5 names, one
``doc-index serve`` answering ``context.resolve`` on each in turn:

- RSS of the server after its first call on each of the caches (1, 2, ... loaded);
- then ``rounds`` passes over the questions, each question asked of every cache in turn:
  warm ``tools/call`` round trips p50/p95 and the RSS sampled after every call (steady:
  median and largest), and the server's peak RSS (``VmHWM``) at the end;
- the RSS of a server that loaded one cache (the single-cache figure).

Where the memory goes (``python -m bench.serve_memory breakdown CACHE_DIR``): one loaded
cache, in this interpreter, by part: section columns, search index bytes, term table,
per-section arrays, resolve's memo, measured with ``tracemalloc`` and ``sys.getsizeof``.

    python -m bench.serve_memory run --root ROOT --cache A --cache B ... [--rounds 2]
    python -m bench.serve_memory breakdown ROOT/CACHE

The server runs from ``/`` (no module of the working directory is imported) with
``--python`` choosing its interpreter, so two installations compare in one run.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .mcp_latency import PROTOCOL_VERSION, receive, send
from .memory import process_rss, tool_argv
from .stats import Summary, quantile

BUDGET = 2000
MIB = 2**20
CACHES = 5
# The targets for 5 x 30 MB caches queried in turn.
TARGET_RSS_MB = 400
TARGET_P50_MS = 30


def peak_rss(pid: int) -> int:
    """The largest RSS the process has had (``VmHWM``), in bytes; 0 where unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Server:
    """A spawned ``doc-index serve`` on pipes, initialized."""

    def __init__(self, root: Path, python: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        argv = ([python, "-m", "doc_index.cli"] if python
                else tool_argv("doc-index", "doc_index.cli"))
        self.proc = subprocess.Popen([*argv, "serve", "--root", str(root)], cwd="/", env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.next_id = 0
        self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        send(self.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        send(self.stdin, {"jsonrpc": "2.0", "id": self.next_id, "method": method,
                          "params": params})
        return receive(self.stdout)

    def resolve(self, cache: str, query: str, budget: int = BUDGET) -> tuple[float, str]:
        """One ``context.resolve`` round trip: seconds and the answer's text."""
        t0 = time.perf_counter()
        reply = self.request("tools/call", {"name": "context.resolve", "arguments": {
            "cache": cache, "query": query, "budget": budget}})
        elapsed = time.perf_counter() - t0
        if "result" not in reply or reply["result"].get("isError"):
            raise RuntimeError(f"resolve failed: {str(reply)[:500]}")
        return elapsed, reply["result"]["content"][0]["text"]

    @property
    def rss(self) -> int:
        return process_rss(self.proc.pid)

    @property
    def peak(self) -> int:
        return peak_rss(self.proc.pid)

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(timeout=120)


def measure(root: Path, caches: Sequence[str], queries: Sequence[str], rounds: int,
            python: str | None = None) -> dict[str, Any]:
    """The scenario of the module docstring; RSS in MiB, times in ms."""
    single = Server(root, python)
    try:
        for q in queries[:5]:
            single.resolve(caches[0], q)
        single_rss = single.rss / MIB
    finally:
        single.close()
    server = Server(root, python)
    try:
        rss_idle = server.rss / MIB
        loaded = []
        first_ms = []
        for cache in caches:
            seconds, _ = server.resolve(cache, queries[0])
            first_ms.append(seconds * 1000)
            loaded.append(server.rss / MIB)
        times: list[float] = []
        samples: list[float] = []
        for _ in range(rounds):
            for q in queries:
                for cache in caches:
                    seconds, _ = server.resolve(cache, q)
                    times.append(seconds * 1000)
                    samples.append(server.rss / MIB)
        peak = server.peak / MIB
    finally:
        server.close()
    times.sort()
    return {
        "caches": list(caches),
        "calls": len(times),
        "rss_idle_mb": rss_idle,
        "rss_single_mb": single_rss,
        "rss_loaded_mb": loaded,  # after the first call on 1, 2, ... caches
        "first_call_ms": first_ms,
        "rss_steady_mb": Summary.of(samples).as_dict(),
        "rss_peak_mb": peak,
        "warm_ms": Summary.of(times).as_dict(),
        "warm_p95_ms": quantile(times, 0.95),
        "targets": {"rss_mb": TARGET_RSS_MB, "p50_ms": TARGET_P50_MS},
    }


def prepare_caches(root: Path, source: Path, base: str, count: int) -> list[str]:
    """``count`` caches of ``source`` under ``root`` named ``<base>-1`` ... (built with the
    installed ``doc-index build --name``; ones already there are kept)."""
    names = []
    for i in range(1, count + 1):
        name = f"{base}-{i}"
        if not (root / name / "manifest.json").is_file():  # --name is the exact name
            subprocess.run([*tool_argv("doc-index", "doc_index.cli"), "build", str(source),
                            "--root", str(root), "--name", name], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        names.append(name)
    return names


def _deep_size(obj: Any, seen: set[int]) -> int:
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        size += sum(_deep_size(x, seen) for x in obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):  # e.g. resolve's memo tables
        size += _deep_size(vars(obj), seen)
    return size


def breakdown(cache_dir: Path, query: str = "deployment security") -> dict[str, Any]:
    """Where one loaded cache's memory goes, in MiB: traced by ``tracemalloc`` (held after
    load and one resolve, and the peak while loading), then by part."""
    import tracemalloc

    from doc_index.search import operations as tools
    from doc_index.search.warm_caches import WarmCaches
    from doc_index.server import spec_texts

    warm = WarmCaches()
    spec_texts.resolve(cache_dir, query, BUDGET)  # imports, page cache
    gc.collect()
    tracemalloc.start()
    spec_texts.resolve(cache_dir, query, BUDGET, warm=warm)
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    cache = warm.get(cache_dir, "resolve", tools.load_for_resolve)
    estimate = getattr(tools, "memory_bytes", None)  # None: a build before the estimate
    out: dict[str, Any] = {"traced_held": held / MIB, "traced_peak": peak / MIB,
                           "estimate": estimate(cache) / MIB if estimate else None,
                           "parts": {}}
    seen: set[int] = set()
    sections = cache.sections
    parts = out["parts"]
    if isinstance(sections, list):  # a build before the column layout
        fields: dict[str, int] = {}
        for s in sections:
            fields["<dicts>"] = fields.get("<dicts>", 0) + sys.getsizeof(s)
            for k, v in s.items():
                fields[k] = fields.get(k, 0) + _deep_size(v, seen)
        parts.update({f"sections.{k}": v / MIB for k, v in fields.items()})
    else:
        for name, column in vars(sections).items():
            if not isinstance(column, (bool, int)):
                parts[f"sections.{name}"] = _deep_size(column, seen) / MIB
    index = cache.index
    parts["index.bytes"] = sys.getsizeof(index.docs.obj) / MIB
    for name in ("terms", "words", "lens", "kinds", "memo"):
        parts[f"index.{name}"] = _deep_size(getattr(index, name), seen) / MIB
    dedup = vars(index).get("dedup", vars(index).get("_dedup"))  # never decoded here
    if dedup is not None:
        parts["index.dedup"] = _deep_size(dedup, seen) / MIB
    cache.close()
    return out


def breakdown_child(cache_dir: Path) -> dict[str, Any]:
    """:func:`breakdown` in a fresh interpreter (nothing else allocated in it)."""
    done = subprocess.run([sys.executable, "-m", "bench.serve_memory", "breakdown",
                           str(cache_dir)], capture_output=True, check=False,
                          cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0:
        raise RuntimeError(f"breakdown failed: {done.stderr.decode()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="spawn a server, load the caches, ask them in turn")
    run.add_argument("--root", type=Path, required=True)
    run.add_argument("--cache", action="append", required=True)
    run.add_argument("--queries", type=Path,
                     default=Path(__file__).resolve().parents[2] / "shared" / "corpora"
                     / "queries-dev.jsonl")
    run.add_argument("--corpus", default="fastapi-docs")
    run.add_argument("--rounds", type=int, default=1)
    run.add_argument("--python", help="the server's interpreter (default: this installation)")
    parts = sub.add_parser("breakdown", help="where one loaded cache's memory goes")
    parts.add_argument("cache_dir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "breakdown":
        print(json.dumps(breakdown(args.cache_dir), indent=1))
        return 0
    from .corpora import queries_for

    result = measure(args.root, args.cache, queries_for(args.corpus, args.queries),
                     args.rounds, args.python)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
