"""MCP server latency: spawn-to-initialize-response and warm ``tools/call`` resolve times.

Spawns ``python -m doc_index.cli serve --root ROOT`` on real pipes and speaks
newline-delimited JSON-RPC to it, timing each round trip on the client side:

    python bench/mcp_latency.py --root ROOT --cache NAME [--query Q ...] [-n 200]

The first ``tools/call`` (cold cache load) is reported on its own; the p50/p90 are over the
following ``n`` calls cycling through the queries.

    python bench/mcp_latency.py --root ROOT --cache NAME --first-answer [--runs 5]

spawns the server as a client does (``initialize``, ``notifications/initialized`` and a
``tools/call`` written at once) and times spawn to the ``tools/call`` answer, with the
answers given before the SDK is loaded (``early_tools=True``, as ``doc-index serve``
runs) and without (``early_tools=False``: the call waits for the SDK import, as before),
alternating in one run, with bytecode and without any (``PYTHONDONTWRITEBYTECODE=1`` and
an empty ``PYTHONPYCACHEPREFIX``: every module compiled from source, as on a CI runner
that has no ``.pyc`` files; ``PYTHONDONTWRITEBYTECODE=1`` alone still reads the existing
ones and changes nothing).
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
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

PROTOCOL_VERSION = "2024-11-05"


def server_command(root: Path, tool_names: str = "dotted") -> list[str]:
    return [
        sys.executable,
        "-m",
        "doc_index.cli",
        "serve",
        "--root",
        str(root),
        "--tool-names",
        tool_names,
    ]


def send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    """Write one JSON-RPC message line to a server's stdin."""
    stdin.write(json.dumps(message).encode() + b"\n")
    stdin.flush()


def receive(stdout: IO[bytes]) -> dict[str, Any]:
    """Read one JSON-RPC message line from a server's stdout."""
    line = stdout.readline()
    if not line:
        raise RuntimeError("server closed stdout")
    reply: dict[str, Any] = json.loads(line)
    return reply


def measure(
    root: Path,
    cache: str,
    queries: Sequence[str],
    n: int = 100,
    budget: int = 4000,
    command: Sequence[str] | None = None,
) -> dict[str, float]:
    """Spawn the server, time the handshake and ``n`` warm resolve calls; seconds / ms."""
    argv = list(command) if command is not None else server_command(root)
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        send(
            proc.stdin,
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "mcp_latency", "version": "1"},
                },
            },
        )
        receive(proc.stdout)
        initialize_s = time.perf_counter() - start
        send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})

        def call(request_id: int, query: str) -> float:
            t0 = time.perf_counter()
            send(
                proc.stdin,
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {
                        "name": "context.resolve",
                        "arguments": {"cache": cache, "query": query, "budget": budget},
                    },
                },
            )
            reply = receive(proc.stdout)
            elapsed = time.perf_counter() - t0
            if "result" not in reply or reply["result"].get("isError"):
                raise RuntimeError(f"resolve failed: {reply}")
            return elapsed

        first_call_s = call(1, queries[0])
        first_answer_s = time.perf_counter() - start
        warm = [call(2 + i, queries[i % len(queries)]) for i in range(n)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    warm_ms = sorted(t * 1000 for t in warm)
    return {
        "spawn_to_initialize_s": initialize_s,
        "first_call_s": first_call_s,
        "spawn_to_first_result_s": first_answer_s,
        "warm_p50_ms": statistics.median(warm_ms),
        "warm_p90_ms": warm_ms[int(0.9 * (len(warm_ms) - 1))],
        "warm_max_ms": warm_ms[-1],
        "calls": float(n),
    }


FIRST_ANSWER_CONDITIONS = ("bytecode", "no_bytecode")


def _run_server(root: Path, early_tools: bool) -> list[str]:
    """``doc-index serve``'s ``run`` in a fresh interpreter, with or without early answers."""
    code = (
        "import sys; from pathlib import Path; from doc_index.server.mcp_server import run; "
        f"sys.exit(run(Path({str(root)!r}), 'dotted', early_tools={early_tools!r}))"
    )
    return [sys.executable, "-c", code]


def first_answer_once(
    root: Path, cache: str, query: str, early_tools: bool, env: dict[str, str], budget: int
) -> tuple[float, float]:
    """One spawn; seconds from spawn to the initialize answer and to the tools/call answer."""
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "mcp_latency", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "context.resolve",
            "arguments": {"cache": cache, "query": query, "budget": budget}}},
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(_run_server(root, early_tools), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        receive(proc.stdout)
        initialize_s = time.perf_counter() - start
        reply = receive(proc.stdout)
        answer_s = time.perf_counter() - start
        if reply.get("id") != 1 or "result" not in reply or reply["result"].get("isError"):
            raise RuntimeError(f"resolve failed: {str(reply)[:500]}")
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return initialize_s, answer_s


def first_answer(
    root: Path, cache: str, query: str, runs: int = 5, budget: int = 2000
) -> dict[str, Any]:
    """Spawn-to-first-answer with and without early answers, alternating; raw seconds."""
    out: dict[str, Any] = {"runs": runs, "cache": cache, "query": query}
    with tempfile.TemporaryDirectory(prefix="no-pyc-") as empty:
        envs = {
            "bytecode": {k: v for k, v in os.environ.items()
                         if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")},
            "no_bytecode": {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
                            "PYTHONPYCACHEPREFIX": empty},
        }
        for condition in FIRST_ANSWER_CONDITIONS:
            series: dict[str, list[float]] = {
                "before_s": [], "after_s": [], "initialize_before_s": [], "initialize_after_s": []}
            for i in range(runs):
                # Alternate which goes first, so drift in the machine's load hits both.
                for early in (i % 2 == 0, i % 2 == 1):
                    init, answer = first_answer_once(
                        root, cache, query, early, envs[condition], budget)
                    series["after_s" if early else "before_s"].append(answer)
                    series["initialize_after_s" if early else "initialize_before_s"].append(init)
            out[condition] = series
    return out


def first_answer_ratio(series: dict[str, list[float]]) -> float:
    """Median spawn-to-first-answer with early answers over the median without."""
    return statistics.median(series["after_s"]) / statistics.median(series["before_s"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--query", action="append", dest="queries")
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("-n", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1, help="spawn this many servers")
    parser.add_argument("--first-answer", action="store_true",
                        help="spawn-to-first-answer, with and without early answers")
    args = parser.parse_args(argv)
    queries = args.queries or ["deployment", "deployment security", "guide"]
    if args.first_answer:
        result = first_answer(args.root, args.cache, queries[0], args.runs, args.budget)
        for condition in FIRST_ANSWER_CONDITIONS:
            series = result[condition]
            print(
                f"{condition}: spawn->first tools/call answer "
                f"{statistics.median(series['before_s']) * 1000:.0f} ms waiting for the SDK, "
                f"{statistics.median(series['after_s']) * 1000:.0f} ms answered early "
                f"(ratio {first_answer_ratio(series):.2f}, median of {args.runs} each)"
            )
        return 0
    for _ in range(args.runs):
        result = measure(args.root, args.cache, queries, n=args.n, budget=args.budget)
        print(
            f"spawn->initialize {result['spawn_to_initialize_s'] * 1000:.0f} ms | "
            f"first resolve {result['first_call_s'] * 1000:.0f} ms "
            f"(spawn->first result {result['spawn_to_first_result_s'] * 1000:.0f} ms) | "
            f"warm resolve p50 {result['warm_p50_ms']:.2f} ms, "
            f"p90 {result['warm_p90_ms']:.2f} ms, max {result['warm_max_ms']:.2f} ms "
            f"over {args.n} calls"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
