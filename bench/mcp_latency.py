"""MCP server latency: spawn-to-initialize-response and warm ``tools/call`` resolve times.

Spawns ``python -m doc_index.cli serve --root ROOT`` on real pipes and speaks
newline-delimited JSON-RPC to it, timing each round trip on the client side:

    python bench/mcp_latency.py --root ROOT --cache NAME [--query Q ...] [-n 200]

The first ``tools/call`` (SDK import finishing + cold cache load) is reported on its own;
the p50/p90 are over the following ``n`` calls cycling through the queries.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--query", action="append", dest="queries")
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("-n", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1, help="spawn this many servers")
    args = parser.parse_args(argv)
    queries = args.queries or ["deployment", "deployment security", "guide"]
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
