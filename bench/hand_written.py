"""Hand-written code where a library exists, measured against the library.

Usage::

    .venv/bin/python -m bench.hand_written pool [--files N] [--rounds N]
    .venv/bin/python -m bench.hand_written json [--sections N] [--rounds N]
    .venv/bin/python -m bench.hand_written lru [--entries N]

- ``pool``: ``store.parallel``'s parse pool (``multiprocessing.Pool`` and its dead-worker
  watch) against ``concurrent.futures.ProcessPoolExecutor`` driving the same batches
  (``BrokenProcessPool`` for a dead worker): parse speed over N small Markdown files, the
  time from SIGKILL of a worker to the build's error, and what a ``kill -9`` of a real
  ``doc-index build`` leaves behind (its workers, the cache's build lock).
- ``json``: ``foundation.strict_json`` against ``json.loads`` with ``parse_constant`` and
  ``object_pairs_hook`` (the stdlib's way to refuse NaN and duplicate keys) on a manifest
  of N sections, and what each accepts.
- ``lru``: ``search.warm_caches.WarmCaches`` (bounded by bytes) against
  ``functools.lru_cache`` and ``cachetools.LRUCache(getsizeof=...)``, when installed.

docs/architecture.md ("Hand-written where a library exists") records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from doc_index.store import parallel

# --- the parse pool ----------------------------------------------------------------------

MARKDOWN = ("# Title {i}\n\nSome text about retries and timeouts, number {i}.\n\n"
            "## Usage\n\nCall `client.get(url, timeout=5)` and retry on failure.\n")


class _ExecutorPool:
    """A ProcessPoolExecutor as ``parallel._parse_in_pool`` drives a Pool: ``apply_async``
    and the workers' list (empty: the executor watches its own workers)."""

    def __init__(self, ctx: Any, workers: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self.executor = ProcessPoolExecutor(workers, mp_context=ctx,
                                            initializer=parallel.limit_memory)
        self._pool: list[Any] = []

    def apply_async(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        return self.executor.submit(fn, *args)


@contextmanager
def _executor_pool(ctx: Any, workers: int) -> Iterator[_ExecutorPool]:
    pool = _ExecutorPool(ctx, workers)
    try:
        yield pool
    finally:  # left early or broken: its workers are killed, not waited for
        processes = list((pool.executor._processes or {}).values())  # type: ignore[attr-defined]
        pool.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join()


def _executor_next(window: deque[Any], workers: list[Any]) -> Iterator[tuple[str, Any]]:
    from concurrent.futures.process import BrokenProcessPool

    paths, pending, _ = window.popleft()
    try:
        results = pending.result()
    except BrokenProcessPool:
        raise ChildProcessError("a parse worker died") from None
    yield from zip(paths, results)


def use_executor() -> None:
    """Make ``parallel`` parse with a ProcessPoolExecutor instead of its Pool and watch."""
    parallel._pool = _executor_pool  # type: ignore[assignment]
    parallel._next = _executor_next  # type: ignore[assignment]


POOLS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "Pool + watch": (parallel._pool, parallel._next),
    "ProcessPoolExecutor": (_executor_pool, _executor_next),
}


def _jobs(count: int) -> list[parallel.Job]:
    texts = [MARKDOWN.format(i=i).encode() for i in range(count)]
    return [(f"docs/d{i // 100}/f{i}.md", (lambda data=data: data), len(data))
            for i, data in enumerate(texts)]


def _staging(work: Path, run: str) -> Path:
    """A staging directory under a fresh root: no parse-cache entry from another run."""
    from doc_index.store.commit import new_staging_dir

    root = work / run
    root.mkdir()
    return new_staging_dir(root, "bench")


def _alternating(work: Path, rounds: int, label: str,
                 measure: Callable[[Path], float]) -> dict[str, list[float]]:
    """``measure(staging)`` with each pool in turn, ``rounds`` times."""
    times: dict[str, list[float]] = {name: [] for name in POOLS}
    for round_no in range(rounds):
        for name in POOLS:
            parallel._pool, parallel._next = POOLS[name]  # type: ignore[assignment]
            try:
                times[name].append(measure(_staging(work, f"{label}-{round_no}-{name[:4]}")))
            finally:
                parallel._pool, parallel._next = POOLS["Pool + watch"]  # type: ignore[assignment]
    return times


def parse_speed(work: Path, files: int, rounds: int) -> dict[str, list[float]]:
    """Seconds to parse ``files`` small files through each pool, rounds alternating."""
    jobs = _jobs(files)

    def measure(staging: Path) -> float:
        started = time.perf_counter()
        done = sum(1 for _ in parallel._parse_in_pool(jobs, staging, 2))
        assert done == files
        return time.perf_counter() - started

    return _alternating(work, rounds, "speed", measure)


def death_detection(work: Path, files: int, rounds: int) -> dict[str, list[float]]:
    """Seconds from SIGKILL of a busy parse worker to the build's ChildProcessError."""
    import multiprocessing

    jobs = _jobs(files)

    def measure(staging: Path) -> float:
        results = parallel._parse_in_pool(jobs, staging, 2)
        killed_at = 0.0
        try:
            for n, _ in enumerate(results):
                if n == 200:  # the pool is busy: kill one of its workers
                    victim = multiprocessing.active_children()[0]
                    os.kill(victim.pid, signal.SIGKILL)  # type: ignore[arg-type]
                    killed_at = time.perf_counter()
        except ChildProcessError:
            return time.perf_counter() - killed_at
        finally:
            results.close()
        raise AssertionError("a dead worker went unnoticed")

    return _alternating(work, rounds, "death", measure)


_RUNNER = """
import sys
if sys.argv[1] == "executor":
    from bench.hand_written import use_executor
    use_executor()
from doc_index.cli.command import main
sys.exit(main(sys.argv[2:]))
"""


def _group_alive(pgid: int) -> int:
    """Live (not zombie) processes in process group ``pgid``."""
    alive = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive += 1
    return alive


def _lock_held(root: Path) -> bool:
    from doc_index.foundation.file_lock import BuildLock

    return any(BuildLock(lock).held_elsewhere() for lock in root.glob(".doc-index-tmp/*/lock"))


def kill_minus_9(work: Path, files: int, mode: str, wait: float = 10.0) -> dict[str, Any]:
    """kill -9 of a real build mid-parse: its processes still alive and whether the
    cache's build lock is still held, right after and ``wait`` seconds later."""
    source = work / f"src-{mode}"
    if not source.exists():
        for i in range(files):
            path = source / f"d{i // 100}" / f"f{i}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(MARKDOWN.format(i=i))
    root = work / f"root-{mode}"
    shutil.rmtree(root, ignore_errors=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, mode, "build", str(source), "--root", str(root),
         "--name", "src"], start_new_session=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, cwd=Path(__file__).resolve().parent.parent)
    deadline = time.monotonic() + 60
    while _group_alive(proc.pid) < 3 and time.monotonic() < deadline:  # the workers are up
        time.sleep(0.01)
    time.sleep(0.5)  # mid-parse
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    started = time.monotonic()
    result: dict[str, Any] = {"alive_after_kill": _group_alive(proc.pid)}
    while _group_alive(proc.pid) and time.monotonic() - started < wait:
        time.sleep(0.01)
    result["seconds_until_none_alive"] = (round(time.monotonic() - started, 2)
                                          if not _group_alive(proc.pid) else None)
    result[f"alive_after_{wait:g}s"] = _group_alive(proc.pid)
    result[f"lock_held_after_{wait:g}s"] = _lock_held(root)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # what is left: not ours to keep
    except ProcessLookupError:
        pass
    return result


def bench_pool(files: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="doc-index-pool-") as tmp:
        work = Path(tmp)
        out: dict[str, Any] = {"parse_seconds": parse_speed(work, files, rounds),
                               "death_seconds": death_detection(work, 2000, rounds)}
        out["kill_minus_9"] = {mode: kill_minus_9(work, files, mode)
                               for mode in ("pool", "executor")}
    return out


# --- strict JSON -------------------------------------------------------------------------

def _manifest(sections: int) -> bytes:
    secs = [{"id": f"docs/f{i // 20}.md#s-{i}", "file": f"docs/f{i // 20}.md",
             "byte_offset": i * 300, "byte_length": 300, "version": f"sha256:{i:064x}",
             "tokens": 75 + i % 40, "title": f"Section {i} — ünïcode",
             "summary": "A summary of the section " * 3, "parent": None if i % 20 else i - 1}
            for i in range(sections)]
    doc = {"index_version": 1, "cache_version": "sha256:" + "0" * 64,
           "document_count": sections, "doc_files": sorted({s["file"] for s in secs}),
           "sections": secs}
    return json.dumps(doc, ensure_ascii=False).encode()


def _stdlib_strict(data: bytes) -> Any:
    """The stdlib's own strictness: NaN and Infinity refused, duplicate keys refused."""
    def constant(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            raise ValueError("duplicate key")
        return out

    return json.loads(data, parse_constant=constant, object_pairs_hook=pairs)


def _streaming(data: bytes) -> Any:
    from doc_index.foundation.strict_json import parse_json_object_streaming

    return parse_json_object_streaming(data, "sections", lambda _: None)


def _strict(data: bytes) -> Any:
    from doc_index.foundation.strict_json import parse_json

    return parse_json(data)


JSON_PARSERS: dict[str, Callable[[bytes], Any]] = {
    "strict_json.parse_json": _strict,
    "strict_json streaming": _streaming,
    "json.loads": json.loads,
    "json.loads + hooks": _stdlib_strict,
}
# The peak RSS a parse adds, in a fresh process: VmHWM (ru_maxrss would keep the peak of
# the process that forked it, this one's).
_PEAK = """
import sys
from bench.hand_written import JSON_PARSERS
def peak():
    line = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
    return int(line.split()[1])
data = open(sys.argv[2], "rb").read()
before = peak()
value = JSON_PARSERS[sys.argv[1]](data)
print((peak() - before) // 1024)
"""


def _accepts(parse: Callable[[bytes], Any], data: bytes) -> str:
    try:
        parse(data)
    except (ValueError, RecursionError) as exc:
        return f"refused ({type(exc).__name__})"
    return "accepted"


def bench_json(sections: int, rounds: int) -> dict[str, Any]:
    data = _manifest(sections)
    times: dict[str, list[float]] = {name: [] for name in JSON_PARSERS}
    for _ in range(rounds):
        for name, parse in JSON_PARSERS.items():
            started = time.perf_counter()
            parse(data)
            times[name].append(time.perf_counter() - started)
    peaks = {}
    with tempfile.NamedTemporaryFile(suffix=".json") as fh:
        fh.write(data)
        fh.flush()
        for name in JSON_PARSERS:
            done = subprocess.run([sys.executable, "-c", _PEAK, name, fh.name], check=True,
                                  capture_output=True, text=True,
                                  cwd=Path(__file__).resolve().parent.parent)
            peaks[name] = int(done.stdout)
    cases = {"NaN": b'{"a": NaN}', "duplicate key": b'{"a": 1, "a": 2}',
             "huge int": b'{"a": ' + b"9" * 5000 + b"}", "lone surrogate": b'{"a": "\\ud800"}',
             "nesting 100000": b"[" * 100000 + b"]" * 100000,
             "BOM": '\ufeff{"a": 1}'.encode(), "Latin-1 byte": b'{"a": "\xe9"}'}
    return {"megabytes": round(len(data) / 1e6, 1), "seconds": times,
            "peak_extra_mib": peaks,
            "accepts": {name: {case: _accepts(parse, doc) for case, doc in cases.items()}
                        for name, parse in JSON_PARSERS.items()}}


# --- the memory-bounded LRU --------------------------------------------------------------

def bench_lru(entries: int) -> dict[str, Any]:
    """Microseconds per hit of each, the stamp (two ``stat`` calls) that any of them needs to
    see a rebuilt cache, and what each does with a value larger than its byte bound."""
    import functools

    from doc_index.search.warm_caches import WarmCaches, cache_stamp

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="doc-index-lru-") as tmp:
        folders = [Path(tmp) / f"c{i}" for i in range(entries)]
        for folder in folders:
            folder.mkdir()
            (folder / "manifest.json").write_text("{}")
        warm = WarmCaches(max_bytes=100)
        for folder in folders:
            warm.get(folder, "k", lambda d: d.name, size=lambda v: 1)
        out["WarmCaches.get hit"] = _hit_seconds(
            lambda f: warm.get(f, "k", lambda d: d.name), folders)
        out["cache_stamp alone"] = _hit_seconds(cache_stamp, folders)
        warm.get(folders[0], "big", lambda d: "x" * 200, size=len)
        out["WarmCaches, one value over the bound"] = (
            "kept (the newest always is)" if warm.get(folders[0], "big", lambda d: "")
            else "dropped")
    cached = functools.lru_cache(maxsize=entries)(lambda f: f.name)
    out["functools.lru_cache hit (no byte bound)"] = _hit_seconds(cached, folders)
    try:
        import cachetools
    except ImportError:
        out["cachetools.LRUCache"] = "not installed"
        return out
    lru: Any = cachetools.LRUCache(maxsize=100, getsizeof=lambda v: 1)
    for folder in folders:
        lru[folder] = folder.name
    out["cachetools.LRUCache hit"] = _hit_seconds(lambda f: lru[f], folders)
    sized: Any = cachetools.LRUCache(maxsize=100, getsizeof=len)  # bytes, as ours
    try:
        sized["big"] = "x" * 200
        out["cachetools, one value over the bound"] = "kept"
    except ValueError as exc:
        out["cachetools, one value over the bound"] = f"refused: ValueError({exc})"
    return out


def _hit_seconds(get: Callable[[Path], Any], keys: list[Path], rounds: int = 2000) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        for key in keys:
            get(key)
    return round((time.perf_counter() - started) / (rounds * len(keys)) * 1e6, 3)  # µs


def _median(value: Any) -> Any:
    if isinstance(value, list) and value and isinstance(value[0], float):
        return {"median": round(statistics.median(value), 4),
                "runs": [round(v, 4) for v in value]}
    if isinstance(value, dict):
        return {k: _median(v) for k, v in value.items()}
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hand_written")
    parser.add_argument("what", choices=("pool", "json", "lru"))
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--sections", type=int, default=120000)
    parser.add_argument("--entries", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if args.what == "pool":
        result = bench_pool(args.files, args.rounds)
    elif args.what == "json":
        result = bench_json(args.sections, args.rounds)
    else:
        result = bench_lru(args.entries)
    print(json.dumps(_median(result), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
