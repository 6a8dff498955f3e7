"""Resolve latency: cold CLI process, in-process ``tools.resolve``, warm MCP ``tools/call``.

Three ways an answer is asked for, each over the fixed questions of
``queries-dev.jsonl`` for the corpus (fastapi's for the scaled fastapi copies):

- cold: one whole ``context resolve --cache DIR --query Q --budget 2000`` process per
  question (interpreter start, imports, cache load, selection, output);
- in-process: ``server.tools.resolve`` in a fresh child interpreter
  (``python -m bench.resolve_speed inprocess ...``), once per question without a warm
  cache (load + select) and then ``rounds`` passes over the questions with the server's
  ``WarmCaches`` (select only, the figure an agent's call costs inside the server);
- MCP: a spawned ``doc-index serve --root ROOT`` on pipes, newline-delimited JSON-RPC:
  spawn-to-initialize-response, the first ``tools/call`` (loads the cache) and ``calls``
  warm ``tools/call`` round trips, then the server's RSS with that cache warm.
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
from .memory import process_rss, run_measured, tool_argv
from .stats import Summary

BUDGET = 2000


def cold_cli(cache_dir: Path, queries: Sequence[str], runs: int,
             budget: int = BUDGET) -> dict[str, Any]:
    """``runs`` whole ``context resolve`` processes cycling through ``queries``."""
    base = [*tool_argv("context", "doc_index.server.context_cli"), "resolve", "--cache",
            str(cache_dir), "--budget", str(budget), "--query"]
    done = [run_measured([*base, queries[i % len(queries)]]) for i in range(runs)]
    for r in done:
        json.loads(r.stdout)  # a real answer, not an error
    return {
        "wall_s": Summary.of(r.wall_s for r in done).as_dict(),
        "cpu_s": Summary.of(r.cpu_s for r in done).as_dict(),
        "peak_rss_mb": Summary.of(r.peak_rss_bytes / 2**20 for r in done).as_dict(),
    }


def in_process(cache_dir: Path, queries_file: Path, corpus: str, rounds: int) -> dict[str, Any]:
    """Run :func:`_in_process_child` in a fresh interpreter; its JSON result."""
    argv = [sys.executable, "-m", "bench.resolve_speed", "inprocess", "--cache", str(cache_dir),
            "--queries", str(queries_file), "--corpus", corpus, "--rounds", str(rounds)]
    done = subprocess.run(argv, capture_output=True, check=False,
                          cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0:
        raise RuntimeError(f"in-process resolve failed: {done.stderr.decode()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _in_process_child(cache_dir: Path, queries: Sequence[str], rounds: int) -> dict[str, Any]:
    started = time.perf_counter()
    from doc_index.search.warm_caches import WarmCaches
    from doc_index.server import spec_texts as tools

    import_s = time.perf_counter() - started
    cold: list[float] = []
    for q in queries:  # no warm cache: load the cache and select, per call
        t0 = time.perf_counter()
        tools.resolve(cache_dir, q, BUDGET)
        cold.append(time.perf_counter() - t0)
    warm = WarmCaches()
    t0 = time.perf_counter()
    tools.resolve(cache_dir, queries[0], BUDGET, warm=warm)
    first_s = time.perf_counter() - t0
    gc.collect()
    per_round: list[float] = []
    calls: list[float] = []
    for _ in range(rounds):
        this_round = []
        for q in queries:
            t0 = time.perf_counter()
            out = tools.resolve(cache_dir, q, BUDGET, warm=warm)
            this_round.append(time.perf_counter() - t0)
            if out.startswith('{"error"'):
                raise RuntimeError(out)
        calls.extend(this_round)
        per_round.append(Summary.of(this_round).median)
    import psutil

    return {
        "import_s": import_s,
        "load_and_select_ms": Summary.of(t * 1000 for t in cold).as_dict(),
        "first_warm_call_ms": first_s * 1000,
        "warm_ms": Summary.of(t * 1000 for t in calls).as_dict(),
        "warm_round_p50_ms": Summary.of(t * 1000 for t in per_round).as_dict(),
        "rss_mb": psutil.Process().memory_info().rss / 2**20,
        "warm_loads": warm.loads,
    }


def mcp_session(root: Path, cache: str, queries: Sequence[str], calls: int,
                budget: int = BUDGET) -> dict[str, Any]:
    """One spawned ``doc-index serve``: handshake, first call, warm calls, RSS."""
    argv = [*tool_argv("doc-index", "doc_index.cli"), "serve", "--root", str(root)]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    try:
        send(stdin, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}})
        receive(stdout)
        initialize_s = time.perf_counter() - start
        rss_idle = process_rss(proc.pid)
        send(stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})

        def call(request_id: int, query: str) -> float:
            t0 = time.perf_counter()
            send(stdin, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                          "params": {"name": "context.resolve", "arguments": {
                              "cache": cache, "query": query, "budget": budget}}})
            reply = receive(stdout)
            elapsed = time.perf_counter() - t0
            if "result" not in reply or reply["result"].get("isError"):
                raise RuntimeError(f"resolve failed: {str(reply)[:500]}")
            return elapsed

        first_s = call(1, queries[0])
        warm = [call(2 + i, queries[i % len(queries)]) for i in range(calls)]
        rss_warm = process_rss(proc.pid)
    finally:
        stdin.close()
        proc.wait(timeout=60)
    return {"initialize_s": initialize_s, "first_call_s": first_s, "warm_s": warm,
            "rss_idle_mb": rss_idle / 2**20, "rss_warm_mb": rss_warm / 2**20}


def mcp(root: Path, cache: str, queries: Sequence[str], spawns: int,
        calls: int) -> dict[str, Any]:
    """``spawns`` server sessions; pooled warm-call distribution, per-spawn medians."""
    sessions = [mcp_session(root, cache, queries, calls) for _ in range(spawns)]
    pooled = [t * 1000 for s in sessions for t in s["warm_s"]]
    return {
        "spawns": spawns,
        "calls_per_spawn": calls,
        "initialize_s": Summary.of(s["initialize_s"] for s in sessions).as_dict(),
        "initialize_raw_s": [s["initialize_s"] for s in sessions],
        "first_call_s": Summary.of(s["first_call_s"] for s in sessions).as_dict(),
        "warm_ms": Summary.of(pooled).as_dict(),
        "warm_spawn_p50_ms": Summary.of(
            Summary.of(s["warm_s"]).median * 1000 for s in sessions).as_dict(),
        "rss_idle_mb": Summary.of(s["rss_idle_mb"] for s in sessions).as_dict(),
        "rss_warm_mb": Summary.of(s["rss_warm_mb"] for s in sessions).as_dict(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    inproc = sub.add_parser("inprocess", help="time tools.resolve in this interpreter")
    inproc.add_argument("--cache", type=Path, required=True)
    inproc.add_argument("--queries", type=Path, required=True)
    inproc.add_argument("--corpus", required=True)
    inproc.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    from .corpora import queries_for

    result = _in_process_child(args.cache, queries_for(args.corpus, args.queries), args.rounds)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
