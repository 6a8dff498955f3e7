"""MCP server latency: spawn-to-initialize-response and warm ``tools/call`` resolve times.

Spawns ``python -m doc_index.cli serve --root ROOT`` on real pipes and speaks
newline-delimited JSON-RPC to it, timing each round trip on the client side:

    python bench/mcp_latency.py --root ROOT --cache NAME [--query Q ...] [-n 200]

The first ``tools/call`` (cold cache load) is reported on its own; the p50/p90 are over the
following ``n`` calls cycling through the queries.

    python bench/mcp_latency.py --root ROOT --cache NAME --first-answer [--runs 5]
        [--python PYTHON ...]

spawns the server as a client does (``initialize``, ``notifications/initialized`` and a
``tools/call`` written at once) and times spawn to the ``tools/call`` answer, with bytecode
and without any (``PYTHONDONTWRITEBYTECODE=1`` and an empty ``PYTHONPYCACHEPREFIX``: every
module compiled from source, as on a CI runner that has no ``.pyc`` files;
``PYTHONDONTWRITEBYTECODE=1`` alone still reads the existing ones and changes nothing).
``--python`` (repeated) compares installations, e.g. two checkouts' venvs, alternating
spawns in one run; the default is this interpreter.
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


def first_answer_once(
    python: str, root: Path, cache: str, query: str, env: dict[str, str], budget: int
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
    argv = [python, *server_command(root)[1:]]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
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
    root: Path, cache: str, query: str, runs: int = 5, budget: int = 2000,
    pythons: Sequence[str] = (),
) -> dict[str, Any]:
    """Spawn-to-first-answer with and without bytecode, per interpreter; raw seconds.

    ``{condition: {"answer_s": [...], "initialize_s": [...]}}`` for this interpreter, and
    ``{"pythons": {python: {condition: ...}}}`` when ``pythons`` are given.
    """
    chosen = list(pythons) or [sys.executable]
    out: dict[str, Any] = {"runs": runs, "cache": cache, "query": query}
    per_python: dict[str, dict[str, Any]] = {p: {} for p in chosen}
    with tempfile.TemporaryDirectory(prefix="no-pyc-") as empty:
        envs = {
            "bytecode": {k: v for k, v in os.environ.items()
                         if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")},
            "no_bytecode": {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
                            "PYTHONPYCACHEPREFIX": empty},
        }
        for condition in FIRST_ANSWER_CONDITIONS:
            for python in chosen:
                per_python[python][condition] = {"answer_s": [], "initialize_s": []}
            for i in range(runs):
                # Alternate the order, so drift in the machine's load hits all alike.
                for python in chosen if i % 2 == 0 else chosen[::-1]:
                    init, answer = first_answer_once(
                        python, root, cache, query, envs[condition], budget)
                    per_python[python][condition]["answer_s"].append(answer)
                    per_python[python][condition]["initialize_s"].append(init)
    if pythons:
        out["pythons"] = per_python
    else:
        out.update(per_python[sys.executable])
    return out


def _first_answer_line(label: str, series: dict[str, list[float]], runs: int) -> str:
    return (f"{label}: spawn->initialize answer "
            f"{statistics.median(series['initialize_s']) * 1000:.0f} ms, "
            f"spawn->first tools/call answer {statistics.median(series['answer_s']) * 1000:.0f} "
            f"ms (median of {runs}; min {min(series['answer_s']) * 1000:.0f}, "
            f"max {max(series['answer_s']) * 1000:.0f})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--query", action="append", dest="queries")
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("-n", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1, help="spawn this many servers")
    parser.add_argument("--first-answer", action="store_true",
                        help="spawn-to-first-answer, with and without bytecode")
    parser.add_argument("--python", action="append", dest="pythons", default=[],
                        help="with --first-answer: the interpreter(s) to spawn the server with")
    args = parser.parse_args(argv)
    queries = args.queries or ["deployment", "deployment security", "guide"]
    if args.first_answer:
        result = first_answer(args.root, args.cache, queries[0], args.runs, args.budget,
                              args.pythons)
        for python, conditions in (result.get("pythons") or {sys.executable: result}).items():
            for condition in FIRST_ANSWER_CONDITIONS:
                print(_first_answer_line(f"{python} {condition}", conditions[condition],
                                         args.runs))
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
