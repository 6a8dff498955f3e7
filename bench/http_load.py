"""Load on one ``doc-index serve --http``: many concurrent clients, a cache rebuilt mid-run.

The issue 32 scenario: the 30 MB corpus (fastapi-docs x20) built as one cache; one server
on 127.0.0.1; ``--clients`` HTTP clients (default 50), each its own connection, post
``tools/call context.resolve`` one after the other for ``--seconds`` (default 60), every
client walking the dev questions of fastapi-docs from its own offset, after one request
has loaded the cache. At 30 % of the run the cache is rebuilt (``doc-index build``,
incremental) with one page changed: generation A, then B.

Every answer is checked against the ``context`` CLI's answer to that question on the
generation it may come from: a request that started after a build ended and ended before
the next began must be that generation's answer byte for byte; one that overlapped a
build may be either generation's, and nothing else (never a mix, never an error). With
the semantic extra, a build commits the new generation first and embeds its new sections
after (docs/search.md): until its vectors are written, that generation is answered by
words alone, so a request overlapping the build may also be generation B's answer with
``DOC_INDEX_SEMANTIC=off`` (counted apart: "B before its vectors"). The
report gives the counts, latency p50/p95 of every request, the throughput, the server's
RSS (sampled every 0.2 s, and its VmHWM) against the serve bound, and the machine's load.

The serve bound (docs/mcp.md "Over stdio"): the server's own RSS before any
cache is loaded, plus 1.2 times the cache budget ``DOC_INDEX_SERVE_CACHE_MB`` (here
``--cache-mb``, default 256), since RSS grows by about 1.2 times the estimate of what is
kept; the peak also holds one load's temporaries.

    python -m bench.http_load [--work DIR] [--clients 50] [--seconds 60] [--cache-mb 256]
                              [--copies 20] [--json FILE]

``make bench`` runs it as its ``http`` stage (``--quick``: 5 copies, 10 clients, 15 s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .corpora import SHARED_CORPORA, WORK, queries_for
from .memory import tool_argv
from .serve_memory import peak_rss
from .stats import Summary, quantile

CLIENTS = 50
SECONDS = 60.0
BUDGET = 2000
CACHE_MB = 256  # the default of DOC_INDEX_SERVE_CACHE_MB
COPIES = 20
NAME = "fastapi-load"
REBUILD_AT = 0.3  # the fraction of the run at which generation B is built
READY = "doc-index serve: listening on "
MIB = 2**20
# Appended to one page for generation B: words of the first questions, so their answers
# change (a section that ranks for them appears).
CHANGE = ("\n\n## Load bench generation B\n\nThis section exists only in generation B of "
          "the HTTP load bench: {words}.\n")


def prepare(work: Path, copies: int) -> tuple[Path, Path, Path]:
    """(source, root, the page generation B changes): fastapi-docs copied ``copies`` times
    under ``work`` once, and built as the cache ``NAME``."""
    source, root = work / f"corpus-x{copies}" / NAME, work / f"root-x{copies}"
    if not source.is_dir():
        for i in range(1, copies + 1):
            shutil.copytree(SHARED_CORPORA / "fastapi-docs", source / f"copy-{i:02d}")
    page = sorted(source.rglob("*.md"))[len(list(source.rglob("*.md"))) // 2]
    build(source, root)
    return source, root, page


def build(source: Path, root: Path) -> tuple[float, float]:
    """``doc-index build`` of ``source`` as ``NAME``: (start, end) in perf_counter time."""
    start = time.perf_counter()
    subprocess.run([*tool_argv("doc-index", "doc_index.cli"), "build", str(source), "--root",
                    str(root), "--name", NAME], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return start, time.perf_counter()


def set_generation(page: Path, original: bytes, generation: str, queries: list[str]) -> None:
    text = original
    if generation == "B":
        text += CHANGE.format(words="; ".join(queries[:8])).encode()
    page.write_bytes(text)


def cli_answers(root: Path, queries: list[str], words_only: bool = False) -> list[str]:
    """The ``context resolve`` CLI's answer to each question, as the tool's text (by words
    alone with ``words_only``: the answer before a build's new vectors are written)."""
    env = {**os.environ, "DOC_INDEX_SEMANTIC": "off"} if words_only else None
    out = []
    for query in queries:
        done = subprocess.run(
            [*tool_argv("context", "doc_index.server.context_cli"), "resolve", "--cache",
             str(root / NAME), "--query", query, "--budget", str(BUDGET)],
            capture_output=True, check=True, env=env)
        out.append(done.stdout.decode("utf-8"))
    return out


class Server:
    """``doc-index serve --http 127.0.0.1:0`` on ``root``, waited for by its readiness
    line; its RSS sampled every 0.2 s until :meth:`stop`."""

    def __init__(self, root: Path, cache_mb: int) -> None:
        env = {**os.environ, "DOC_INDEX_SERVE_CACHE_MB": str(cache_mb)}
        env.pop("DOC_INDEX_HTTP_TOKEN", None)
        self.proc = subprocess.Popen(
            [*tool_argv("doc-index", "doc_index.cli"), "serve", "--root", str(root), "--http",
             "127.0.0.1:0"], cwd="/", env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert self.proc.stderr is not None
        line = "-"
        while line and not line.startswith(READY):  # (the meaning line comes first)
            line = self.proc.stderr.readline().decode()
        if not line:
            raise RuntimeError("the server ended before it listened")
        self.url = line[len(READY):].split(";", 1)[0]
        self.rss_idle = self.rss()
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._sample, daemon=True)
        self._watch.start()

    def rss(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self.samples.append(self.rss())

    def stop(self) -> tuple[float, int]:
        """(peak RSS MiB, exit status) after SIGTERM."""
        self._stop.set()
        self._watch.join()
        peak = peak_rss(self.proc.pid) / MIB
        self.proc.terminate()
        assert self.proc.stderr is not None
        rest = self.proc.stderr.read().decode()
        status = self.proc.wait(timeout=120)
        if rest.strip():
            print(f"server stderr: {rest.strip()[:2000]}", file=sys.stderr)
        return peak, status


@dataclass
class Record:
    start: float
    end: float
    question: int
    text: str | None  # None: not a tool answer (the error is in ``error``)
    error: str = ""


@dataclass
class Run:
    records: list[Record] = field(default_factory=list)
    builds: list[tuple[str, float, float]] = field(default_factory=list)  # gen, start, end


_TLS: Any = None


async def client(url: str, offset: int, queries: list[str], deadline: float,
                 run: Run) -> None:
    """One client: its own connection, one request after the other until ``deadline``
    (one at least)."""
    import ssl

    import httpx2

    global _TLS
    if _TLS is None:  # (a client of its own loads the CA bundle: 270 ms each at load 19)
        _TLS = ssl.create_default_context()
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(600.0), headers=headers,
                                  verify=_TLS) as http:
        k = offset
        while k == offset or time.perf_counter() < deadline:
            qi = k % len(queries)
            message = {"jsonrpc": "2.0", "id": k, "method": "tools/call", "params": {
                "name": "context.resolve",
                "arguments": {"cache": NAME, "query": queries[qi], "budget": BUDGET}}}
            start = time.perf_counter()
            try:
                response = await http.post(url, json=message)
                reply = response.json()
                text = reply["result"]["content"][0]["text"]
                error = "tool error" if reply["result"].get("isError") else ""
            except Exception as exc:  # noqa: BLE001 (counted and shown, never hidden)
                text, error = None, f"{type(exc).__name__}: {exc}"[:200]
            run.records.append(Record(start, time.perf_counter(), qi, text, error))
            k += 1


def rebuild_at(source: Path, root: Path, page: Path, original: bytes, queries: list[str],
               when: float, run: Run) -> None:
    """Build generation B at ``when`` (perf_counter time)."""
    delay = when - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
    set_generation(page, original, "B", queries)
    start, end = build(source, root)
    run.builds.append(("B", start, end))


def allowed(record: Record, builds: list[tuple[str, float, float]]) -> set[str]:
    """The generations ``record`` may be answered from: the one live for its whole span,
    or, when a build overlapped it, the ones before and after that build."""
    live, out = "A", set()
    for generation, start, end in builds:
        if record.end < start:
            break
        if record.start <= end:  # the build overlapped the request
            out |= {live, generation}
        live = generation
    return out or {live}


def timeline(records: list[Record], begin: float, seconds: float) -> list[int]:
    """Requests answered in each 5 s of the run."""
    out = [0] * (int(seconds) // 5 + 2)
    for record in records:
        out[min(int((record.end - begin) // 5), len(out) - 1)] += 1
    return out


def check(run: Run, expected: dict[str, list[str]]) -> dict[str, Any]:
    """Counts of right, wrong (another answer) and failed requests, by kind."""
    right = wrong = failed = overlapped = 0
    examples: list[str] = []
    seen = {"A": 0, "B": 0, "B before its vectors": 0}
    for record in run.records:
        gens = allowed(record, run.builds)
        overlapped += len(gens) > 1
        if len(gens) > 1 and "B" in gens:  # B's build overlapped: its words-only state too
            gens = gens | {"B before its vectors"}
        match = [g for g in expected if record.text == expected[g][record.question]]
        if record.text is None or record.error:
            failed += 1
            examples.append(record.error)
        elif set(match) & gens:
            right += 1
            seen[sorted(set(match) & gens)[0]] += 1
        else:
            wrong += 1
            examples.append(f"question {record.question}: {(record.text or '')[:200]}")
    return {"requests": len(run.records), "right": right, "wrong": wrong, "failed": failed,
            "overlapping_a_rebuild": overlapped, "answered_from": seen,
            "examples": examples[:5]}


def measure(work: Path, clients: int = CLIENTS, seconds: float = SECONDS,
            cache_mb: int = CACHE_MB, copies: int = COPIES) -> dict[str, Any]:
    """The scenario of the module docstring; times in ms, RSS in MiB."""
    import anyio

    queries = queries_for("fastapi-docs", SHARED_CORPORA / "queries-dev.jsonl")
    source, root, page = prepare(work.resolve(), copies)
    original = page.read_bytes()
    expected = {}
    for generation in ("B", "A"):  # A is live at the end
        set_generation(page, original, generation, queries)
        build(source, root)
        expected[generation] = cli_answers(root, queries)
        if generation == "B":
            expected["B before its vectors"] = cli_answers(root, queries, words_only=True)
    changed = sum(a != b for a, b in zip(expected["A"], expected["B"]))
    server = Server(root, cache_mb)
    first = Run()
    anyio.run(client, server.url, 0, queries[:1], 0.0, first)  # one request: the load
    run = Run()
    load_before = os.getloadavg()
    begin = time.perf_counter()
    builder = threading.Thread(target=rebuild_at, args=(
        source, root, page, original, queries, begin + REBUILD_AT * seconds, run))
    builder.start()

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for i in range(clients):
                group.start_soon(client, server.url, i, queries, begin + seconds, run)

    try:
        anyio.run(main)
        builder.join()
    finally:
        page.write_bytes(original)
        peak, status = server.stop()
    wall = time.perf_counter() - begin
    times = sorted((r.end - r.start) * 1000 for r in run.records)
    steady = server.samples
    return {
        "clients": clients, "seconds": seconds, "wall_s": wall, "budget": BUDGET,
        "corpus_mb": sum(p.stat().st_size for p in source.rglob("*.md")) / 1e6,
        "questions": len(queries), "questions_changed_by_b": changed,
        "check": check(run, expected),
        "builds": [{"generation": g, "at_s": s - begin, "seconds": e - s}
                   for g, s, e in run.builds],
        "throughput_per_s": len(run.records) / wall,
        "latency_ms": Summary.of(times).as_dict(), "p95_ms": quantile(times, 0.95),
        "p99_ms": quantile(times, 0.99),
        "rss_idle_mb": server.rss_idle, "rss_steady_mb": Summary.of(steady).as_dict(),
        "rss_peak_mb": peak, "cache_mb": cache_mb,
        "rss_bound_mb": server.rss_idle + 1.2 * cache_mb,
        "first_call_ms": (first.records[0].end - first.records[0].start) * 1000,
        "per_5s": timeline(run.records, begin, seconds),
        "exit_status": status,
        "load_before": load_before, "load_after": os.getloadavg(), "cpus": os.cpu_count(),
    }


def render(result: dict[str, Any]) -> str:
    """A few lines for people."""
    c, lat = result["check"], result["latency_ms"]
    within = result["rss_peak_mb"] <= result["rss_bound_mb"]
    builds = ", ".join(f"{b['generation']} at {b['at_s']:.0f} s ({b['seconds']:.1f} s)"
                       for b in result["builds"])
    return "\n".join([
        f"{result['clients']} clients x {result['seconds']:.0f} s, {result['corpus_mb']:.0f} MB "
        f"corpus, budget {result['budget']}, {result['questions']} questions "
        f"({result['questions_changed_by_b']} answered differently by generation B)",
        f"requests {c['requests']}: right {c['right']}, wrong {c['wrong']}, failed "
        f"{c['failed']}; {c['overlapping_a_rebuild']} overlapped a rebuild; answered from "
        f"A {c['answered_from']['A']}, B {c['answered_from']['B']} (before its vectors "
        f"{c['answered_from']['B before its vectors']}); rebuilds: {builds}",
        f"throughput {result['throughput_per_s']:.1f} req/s; latency ms p50 "
        f"{lat['median']:.0f}, p95 {result['p95_ms']:.0f}, p99 {result['p99_ms']:.0f}, max "
        f"{lat['max']:.0f}",
        f"answered per 5 s: {' '.join(map(str, result['per_5s']))}; first call (the load) "
        f"{result['first_call_ms']:.0f} ms",
        f"RSS MiB: idle {result['rss_idle_mb']:.0f}, steady {result['rss_steady_mb']['median']:.0f}"
        f" [{result['rss_steady_mb']['min']:.0f}-{result['rss_steady_mb']['max']:.0f}], peak "
        f"{result['rss_peak_mb']:.0f}; bound idle + 1.2 x {result['cache_mb']} = "
        f"{result['rss_bound_mb']:.0f}: {'within' if within else 'OVER'}",
        f"load average before {result['load_before'][0]:.1f}, after "
        f"{result['load_after'][0]:.1f} ({result['cpus']} CPUs); server exit "
        f"{result['exit_status']}",
    ]) + ("\n" + "\n".join(c["examples"]) if c["examples"] else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=WORK / "http-load")
    parser.add_argument("--clients", type=int, default=CLIENTS)
    parser.add_argument("--seconds", type=float, default=SECONDS)
    parser.add_argument("--cache-mb", type=int, default=CACHE_MB)
    parser.add_argument("--copies", type=int, default=COPIES,
                        help="copies of fastapi-docs in the corpus (20: 30 MB)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)
    result = measure(args.work, args.clients, args.seconds, args.cache_mb, args.copies)
    print(render(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    ok = (result["check"]["wrong"] == 0 and result["check"]["failed"] == 0
          and result["rss_peak_mb"] <= result["rss_bound_mb"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
