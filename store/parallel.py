"""Parsing many files on all cores, in order, with bounded memory.

``index_file`` is pure, so files are parsed in worker processes; each worker also writes
the file's normalized raw bytes into the staging directory, so big texts never travel
back. Results come back in submission order, with at most a few files in flight.

A few files (an incremental build, or a build too small for the pool) are parsed by one
forked child, in the background when the build has other work meanwhile (copying the
unchanged files) instead of waiting for the parsers to import and run.

Every process that parses has an address-space limit, ``worker_limit_bytes`` above what
it held when it started (the last wall of the indexer's memory model, ``indexer.limits``):
a file whose parse needs more gets a ``MemoryError`` there, which ends that file (skipped,
with the limit as the reason), never the build. Nothing parses in the build's own
process where ``fork`` exists: a limit there would hold the caller's whole process.
"""

from __future__ import annotations

import fcntl
import gc
import hashlib
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ..indexer.model import ParsedFile

if TYPE_CHECKING:
    from collections.abc import Generator
    from typing import TypeAlias

    from ..sources.expansion import ExpandConfig
    from .parse_cache import ParseCache

    # What parse_files returns: the results in job order; ``close`` stops what is left.
    ParseResults: TypeAlias = "Generator[tuple[str, ParsedFile | str], None, None] | _ChildResults"

MIN_PARALLEL_BYTES = 256 * 1024
# Files go to the pool in batches of about this many bytes (fewer when that would leave
# too few batches to share): one task per tiny file kept the build waiting on the pool's
# round trips (20,000 files of 400 bytes: most of a full build).
BATCH_BYTES = 64 * 1024
# Batches in flight (sent, or done but not yet taken in order) per worker. The main
# process hands out the next batch only while it takes results (it holds the GIL for the
# id pass meanwhile), so a short window left each worker idle for a fifth of a 30 MB build
# (4 per worker: 1.4 s of 6.6 s; 8 or more: 0.8 s, the rest is pickling).
IN_FLIGHT_PER_WORKER = 16
# ... and at most about this many bytes of source in flight (but one batch per worker at
# least): a batch holds one file at least, so 16 batches per worker of 10 MB files held
# 640 MB of source in the main process (1 GiB files with --max-file-bytes: 64 GiB). Builds
# of files under BATCH_BYTES never reach it (64 batches of 64 KB are 4 MB).
MAX_IN_FLIGHT_BYTES = 32 * 1024 * 1024
Job = tuple[str, Callable[[], bytes], int]  # (path, read, size)
_WATCH_SECONDS = 0.5  # how often a wait for a result looks for a dead worker
DEFAULT_WORKER_MB = 512


def worker_limit_bytes() -> int:
    """How much address space a parse worker may add to what it held when it started:
    ``DOC_INDEX_PARSE_WORKER_MB`` MiB (a whole number from 16), default ``DEFAULT_WORKER_MB``;
    0 means no limit."""
    text = os.environ.get("DOC_INDEX_PARSE_WORKER_MB", "")
    if not (text.isascii() and text.isdigit() and len(text) < 8):
        return DEFAULT_WORKER_MB << 20
    mb = int(text)
    return 0 if mb == 0 else max(mb, 16) << 20


def limit_memory() -> None:
    """In a parse worker: cap its address space at its present size plus
    ``worker_limit_bytes`` (Linux; elsewhere, or when the size cannot be read, nothing)."""
    extra = worker_limit_bytes()
    if extra == 0:
        return
    try:
        import resource  # lazy: optional: an ImportError is handled here

        with open("/proc/self/statm", "rb") as fh:
            size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = size + extra
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft == resource.RLIM_INFINITY or limit < soft:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):
        pass


def _too_big() -> str:
    """The skip reason of a file whose parse passed the limit, once its memory is freed."""
    gc.collect()  # the failed parse's trees hold cycles: give their memory back now
    return f"parsing it needed more than {worker_limit_bytes() >> 20} MiB"


def write_raw(staging: Path, path: str, raw: bytes) -> None:
    """Write a raw file under ``staging``, creating the folders below it one by one: a
    worker that outlives its build never recreates a staging directory a later build
    cleaned up (its mkdir or open fails instead)."""
    target = staging / path
    if not target.parent.is_dir():
        here = staging
        for part in path.split("/")[:-1]:
            here = here / part
            try:
                os.mkdir(here)
            except FileExistsError:
                pass
    with open(target, "wb") as fh:
        fh.write(raw)


# The expansion of the build this process parses for (``store.expansion``): set before
# the pool forks (its workers inherit it), sent with the jobs to a warm worker.
_expand: ExpandConfig | None = None


def parse_one(path: str, data: bytes, staging: str) -> ParsedFile | str:
    """Parse a file (or take its sections from the parse cache) and store its raw bytes;
    the reason string when it is not indexable. A page that pulls text in (includes,
    autodoc) is expanded first when the build has a source to read it from."""
    # lazy: the parsers load only where a file is parsed
    from ..indexer.document import NotIndexable, index_file, normalize_source  # in the worker
    from .parse_cache import for_build  # lazy: defers store.parse_cache (+22 modules) to the call

    parsed = None
    try:
        cache = for_build(staging)
        raw = normalize_source(data)
        parsed = _parse_expanded(path, data, raw, cache)
        if parsed is None:
            parsed = cache.get(path, data, raw)
        if parsed is None:
            parsed = index_file(path, data)
            cache.put(path, data, parsed)
    except NotIndexable as exc:
        return exc.reason
    except RecursionError:
        return "too deeply nested to parse"
    except MemoryError:
        parsed = None  # (out of the handler, the failed parse's frames are gone)
    if parsed is None:
        return _too_big()
    write_raw(Path(staging), path, parsed.raw)
    return parsed._replace(raw=b"", raw_digest=hashlib.sha256(parsed.raw).hexdigest())


def _parse_expanded(path: str, data: bytes, raw: bytes, cache: ParseCache) -> ParsedFile | None:
    """Page ``path`` expanded and parsed (from the parse cache when its dependencies are
    as they were), or None when it has nothing to expand."""
    # lazy: a read of a cache never loads the build's source scanning
    from ..sources.expansion import expander_for

    expander = expander_for(_expand, path, raw)
    if expander is None:
        return None
    parsed = cache.get_expanded(path, data, expander.state)
    if parsed is None:
        parsed = expander.parse(path, raw)
        if parsed is not None:
            cache.put_expanded(path, data, parsed)
    return parsed


def parse_batch(batch: list[tuple[str, bytes | str]], staging: str) -> list[ParsedFile | str]:
    """``parse_one`` over (path, bytes or skip reason) pairs, in order (their parse cache
    entries written as one pack)."""
    from .parse_cache import for_build  # lazy: defers store.parse_cache (+22 modules) to the call

    results = [content if isinstance(content, str) else parse_one(path, content, staging)
               for path, content in batch]
    for_build(staging).flush()
    return results


def _worker_count(jobs: list[Job]) -> int:
    """Pool workers for ``jobs``: 0 for a few files or a few bytes (one child parses them)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if len(jobs) < 4 or sum(size for _, _, size in jobs) < MIN_PARALLEL_BYTES:
        return 0
    return max(1, min(cpus, 4))


def parse_files(jobs: list[Job], staging: Path, *, background: bool = False,
                warm: WarmWorker | None = None, expand: ExpandConfig | None = None,
                ) -> ParseResults:
    """Yield ``(path, ParsedFile or skip reason)`` for every job, in order.

    The bytes are read here (sources need not be fork-safe) and sent to a worker. A job
    list too small for the pool is parsed by one forked child that starts at once (with
    ``background``, call this early and consume the results later): ``warm``, a worker
    forked when the build started, if there is one. ``expand``: how the source's pages
    are expanded (``store.expansion``), None for none."""
    workers = _worker_count(jobs)
    if workers == 0 and jobs and hasattr(os, "fork"):
        if warm is not None:  # forked when the build started: its parsers are imported
            results = warm.take(jobs, staging, expand)
            if results is not None:
                return results
        return _parse_in_child(jobs, staging, expand)
    return _parse_in_pool(jobs, staging, workers, expand)


@contextmanager
def _expanding(expand: ExpandConfig | None) -> Iterator[None]:
    """``expand`` is this process's (and its forked workers') while the block runs."""
    global _expand
    # lazy: a read of a cache never loads the build's source scanning
    from ..sources.expansion import forget

    before, _expand = _expand, expand
    try:
        yield
    finally:
        _expand = before
        forget(expand)


def _parse_in_pool(jobs: list[Job], staging: Path, workers: int,
                   expand: ExpandConfig | None = None,
                   ) -> Generator[tuple[str, ParsedFile | str], None, None]:
    with _expanding(expand):
        yield from _parse_in_pool_now(jobs, staging, workers)


def _parse_in_pool_now(jobs: list[Job], staging: Path, workers: int,
                       ) -> Generator[tuple[str, ParsedFile | str], None, None]:
    import multiprocessing  # lazy: the parse workers load only for a build that parses

    if workers == 0 or "fork" not in multiprocessing.get_all_start_methods():
        yield from _parse_here(jobs, staging)
        return
    ctx = multiprocessing.get_context("fork")
    _warm_parsers(jobs)
    # The largest files start first: in path order, one big file near the end would keep
    # one worker busy alone while the others idle.
    total = sum(size for _, _, size in jobs)
    big = {path for path, _, size in sorted(jobs, key=lambda j: -j[2])[:workers]
           if size * 8 > total}
    target = max(1, min(BATCH_BYTES, total // (workers * 8)))
    where = str(staging)
    with _pool(ctx, workers) as pool:
        # Its workers, watched while a result is awaited: one that dies (the OOM killer, a
        # signal) is replaced by the pool, and the batch it held never comes back (the
        # build waited for it for ever, holding its lock). The pool's own list, copied now
        # (a replacement is added to it): the children that appeared while it started may
        # include another thread's, e.g. a second build's pool, whose normal exit was
        # taken for a dead parse worker.
        pool_workers = list(pool._pool)
        early = {path: pool.apply_async(parse_batch, ([(path, _read(read))], where))
                 for path, read, _ in jobs if path in big}
        window: deque = deque()  # (paths, pending batch result, bytes), in job order
        limit = workers * IN_FLIGHT_PER_WORKER
        batch: list[tuple[str, bytes | str]] = []
        size = in_flight = 0
        for path, read, nbytes in jobs:
            if path in early:
                if batch:
                    window.append(_submit(pool, batch, size, where))
                    in_flight += size
                    batch, size = [], 0
                window.append(([path], early.pop(path), nbytes))
                in_flight += nbytes
            else:
                batch.append((path, _read(read)))
                size += nbytes
                if size >= target:
                    window.append(_submit(pool, batch, size, where))
                    in_flight += size
                    batch, size = [], 0
            while len(window) >= limit or (
                    len(window) > workers and in_flight > MAX_IN_FLIGHT_BYTES):
                in_flight -= window[0][2]
                yield from _next(window, pool_workers)
        if batch:
            window.append(_submit(pool, batch, size, where))
        while window:
            yield from _next(window, pool_workers)


def _parse_here(jobs: list[Job], staging: Path,
                ) -> Generator[tuple[str, ParsedFile | str], None, None]:
    """Parse in this process (no fork): no memory limit, the design's bounds only."""
    from .parse_cache import release  # lazy: defers store.parse_cache (+22 modules) to the call

    try:
        for n, (path, read, _) in enumerate(jobs, 1):
            data = _read(read)
            result = data if isinstance(data, str) else parse_one(path, data, str(staging))
            if n == len(jobs):  # before the last yield: the consumer may stop there
                release(str(staging))
            yield path, result
    finally:
        release(str(staging))


@contextmanager
def _pool(ctx: Any, workers: int) -> Iterator[Any]:
    """``ctx.Pool(workers)``, terminated on the way out as ``with Pool`` does, except after
    a worker died (``ChildProcessError`` from :func:`_next`): then it is abandoned.

    Not ``concurrent.futures.ProcessPoolExecutor``, whose ``BrokenProcessPool`` would
    replace the watch in :func:`_next` and :func:`_abandon`: its forked workers keep the
    write end of their task queue, so after a ``kill -9`` of the build (or the OOM killer)
    they wait for work for ever, holding the build lock they inherited, and the next build
    waits out its lock timeout. A Pool worker closes that end: the build's death is the
    end of its input, and it exits once its batch is done. The price: a dead worker is
    seen within ``_WATCH_SECONDS``, not at once (docs/decisions/build-and-serve-internals.md,
    "Hand-written
    where a library exists").
    """
    pool = ctx.Pool(workers, initializer=limit_memory)
    try:
        yield pool
    except ChildProcessError:
        _abandon(pool)
        raise
    except BaseException:
        pool.terminate()
        raise
    pool.terminate()


def _abandon(pool: Any) -> None:
    """Stop a pool one of whose workers died without waiting on its queues' locks.

    ``Pool.terminate`` takes its task queue's read lock and its result queue's write lock,
    and a worker killed while holding one never gives it back: the build hung in
    ``terminate`` after the error was found. So ``terminate`` runs in a daemon thread
    (where it may stay blocked; the Pool's exit-time finalizer is the same call, so the
    interpreter's exit does not wait on it either). Its first step stops the pool from
    replacing workers; once its worker handler has ended, every worker is killed and
    reaped here."""
    threading.Thread(target=pool.terminate, name="doc-index-pool-abandon", daemon=True).start()
    pool._worker_handler.join()  # no worker is started after this
    for worker in list(pool._pool):
        if worker.exitcode is None:
            worker.kill()
        worker.join()


def _parse_in_child(jobs: list[Job], staging: Path, expand: ExpandConfig | None = None,
                    ) -> ParseResults:
    """Fork one child that parses every job and streams the results back over a pipe;
    return the iterator over them (the child runs while the caller does other work)."""
    results = WarmWorker().take(jobs, staging, expand)
    if results is None:
        raise ChildProcessError("the parse worker died")
    return results


def _serve(data: list[tuple[str, bytes | str]], staging: str, out: BinaryIO,
           expand: ExpandConfig | None = None) -> None:
    """In a parse child: parse each (path, bytes or skip reason), stream the results."""
    import pickle  # lazy: the parse workers load only for a build that parses

    global _expand
    _expand = expand
    limit_memory()
    for path, content in data:
        try:
            result: ParsedFile | str | BaseException = content if isinstance(
                content, str) else parse_one(path, content, staging)
        except Exception as exc:  # noqa: BLE001 (re-raised in the parent)
            result = exc
        pickle.dump((path, result), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()
    from .parse_cache import for_build  # lazy: defers store.parse_cache (+22 modules) to the call

    for_build(staging).flush()


class WarmWorker:
    """A parse child forked when a build starts, before it knows what changed: it imports
    the parsers while the build imports the store, walks the source and reads the old
    cache, then parses what ``take`` sends it (or exits when ``close``d unused). It is
    forked before the build lock is taken and writes raw files only into a staging
    directory that still exists (``write_raw``). Used as a context manager by the one
    code that owns it (``close`` on the way out); with ``fork=False`` it is an idle
    stand-in that ``take`` nothing."""

    def __init__(self, *, fork: bool = True) -> None:
        self._pid = 0
        if not fork or not hasattr(os, "fork"):
            return
        jobs_r, jobs_w = os.pipe()
        results_r, results_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                import pickle  # lazy: the parse workers load only for a build that parses

                os.close(jobs_w)
                os.close(results_r)
                _warm_markdown()
                with open(jobs_r, "rb") as inp:
                    order = pickle.load(inp)
                with open(results_w, "wb") as out:
                    _serve(order[1], order[0], out, order[2])
                code = 0
            except BaseException:  # noqa: BLE001, S110 (EOF: the build needed nothing)
                pass
            finally:
                os._exit(code)
        os.close(jobs_r)
        os.close(results_w)
        try:  # room for the job list, so that sending it does not wait for the imports

            fcntl.fcntl(jobs_w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except OSError:
            pass
        self._pid, self._jobs, self._results = pid, jobs_w, results_r

    def take(self, jobs: list[Job], staging: Path,
             expand: ExpandConfig | None = None) -> _ChildResults | None:
        """Send ``jobs`` (and how to expand their pages) to the worker; its results in
        order (None if it is gone)."""
        import pickle  # lazy: the parse workers load only for a build that parses

        if self._pid == 0:
            return None
        data = [(path, _read(read)) for path, read, _ in jobs]
        out = open(self._jobs, "wb")  # noqa: SIM115 (closed below)
        self._jobs = -1
        try:
            with out:
                pickle.dump((str(staging), data, expand), out,
                            protocol=pickle.HIGHEST_PROTOCOL)
        except OSError:  # the worker is gone
            self.close()
            return None
        pid, self._pid = self._pid, 0
        return _ChildResults(pid, open(self._results, "rb"), len(jobs))  # noqa: SIM115

    def __enter__(self) -> WarmWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop and reap the worker if ``take`` did not hand it work."""
        if self._pid == 0:
            return
        for fd in (self._jobs, self._results):
            if fd >= 0:
                os.close(fd)
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self._pid, 0)
        self._pid = 0


def _warm_markdown() -> None:
    # lazy: the parsers load only where a file is parsed
    from ..indexer.document import index_file  # noqa: F401 (imported for what follows)

    # lazy: the parsers load only where a file is parsed
    from ..indexer.formats import FALLBACK

    FALLBACK.warm()  # (Markdown: the format of most pages)


class _ChildResults:
    """The results a parse child streams back, in job order; ``close`` reaps the child
    (killing it first when results were left unread)."""

    def __init__(self, pid: int, pipe: BinaryIO, count: int) -> None:
        self._pid = pid
        self._pipe = pipe
        self._left = count

    def __iter__(self) -> _ChildResults:
        return self

    def __next__(self) -> tuple[str, ParsedFile | str]:
        import pickle  # lazy: the parse workers load only for a build that parses

        if self._left == 0 or self._pid == 0:
            self.close()
            raise StopIteration
        try:
            path, result = pickle.load(self._pipe)
        except EOFError:
            self.close()
            raise ChildProcessError("the parse worker died") from None
        self._left -= 1
        if isinstance(result, BaseException):
            self.close()
            raise result
        if self._left == 0:
            self.close()
        return path, result

    def close(self) -> None:
        if self._pid == 0:
            return
        if self._left:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._pipe.close()
        os.waitpid(self._pid, 0)
        self._pid = 0

    def __del__(self) -> None:
        self.close()


def _warm_parsers(jobs: list[Job]) -> None:
    """Import and set up the parsers the jobs need once, before forking, so workers
    inherit them (not the other one: tens of milliseconds before any parse starts)."""
    # lazy: the parsers load only where a file is parsed
    from ..indexer.document import index_file  # noqa: F401 (imported for the workers)

    # lazy: the parsers load only where a file is parsed
    from ..indexer.formats import FORMATS, format_of

    # lazy: defers store.parse_cache (+22 modules) to the call
    from .parse_cache import indexer_salt

    indexer_salt()
    needed = {format_of(path).name for path, _, _ in jobs}
    for known in FORMATS:  # (in registry order: the same order every build)
        if known.name in needed:
            known.warm()


def _submit(pool: Any, batch: list[tuple[str, bytes | str]], size: int, staging: str,
            ) -> tuple[list[str], Any, int]:
    return [path for path, _ in batch], pool.apply_async(parse_batch, (batch, staging)), size


def _next(window: deque, workers: list[Any]) -> Iterator[tuple[str, ParsedFile | str]]:
    paths, pending, _ = window.popleft()
    while not pending.ready():
        pending.wait(_WATCH_SECONDS)
        if any(worker.exitcode is not None for worker in workers):
            raise ChildProcessError("a parse worker died")
    yield from zip(paths, pending.get())


def _read(read: Callable[[], bytes]) -> bytes | str:
    try:
        return read()
    except OSError as exc:
        return f"unreadable ({type(exc).__name__})"
