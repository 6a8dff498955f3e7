"""Warm caches: parsed cache objects kept in memory between tool calls, never stale.

The store publishes a rebuilt cache by swapping the whole directory (new directory
inode) and ``manifest.json`` is the commit point of a build, so a cheap stamp taken with
two ``stat`` calls tells whether what is in memory still describes what is on disk:

    (dir st_dev, dir st_ino, dir st_mtime_ns,
     manifest st_ino, st_size, st_mtime_ns, st_ctime_ns)

:class:`WarmCaches` maps ``(cache directory, kind)`` to ``(stamp, loaded value)``. A call
takes the stamp, reuses the value when the stamp is unchanged, otherwise loads afresh and
keeps the result only if the stamp did not move while it loaded (a rebuild racing with
the load is never cached under the old stamp). Load errors are not cached, so a broken
cache that is repaired is seen on the next call.

Bounded, least recently used first out: by number of entries, and by memory, the sum of
the values' estimated sizes (``size`` of each ``get``; a loaded native cache of the 30 MB
fastapi x20 corpus is estimated at 40 MiB, and grows the server's RSS by about 50). The
value a call just loaded is always kept, even alone over the budget: the bound is the
budget or the largest single cache, whichever is larger. An evicted value is dropped, not
closed: a call still using it finishes, and it is freed with its last reference.
``doc-index serve`` takes its budget from ``DOC_INDEX_SERVE_CACHE_MB``
(:func:`memory_budget`).

A rebuilt cache's old generation is dropped before the new one loads, not after: a
server then holds one generation of a cache plus the load's temporaries, not both (the
30 MB corpus rebuilt under 50 HTTP clients: peak RSS 215 MiB with both held).

Trade-off: a cache rewritten in place without touching the directory or its manifest
(not something the store or ``context build`` does) is not noticed until evicted.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from ..foundation.errors import UsageError

T = TypeVar("T")

MANIFEST = "manifest.json"
MEMORY_ENV = "DOC_INDEX_SERVE_CACHE_MB"
DEFAULT_MEMORY_MB = 256
_MIB = 1 << 20


def memory_budget(environ: Mapping[str, str]) -> int:
    """The bytes of loaded caches ``doc-index serve`` keeps warm: ``DOC_INDEX_SERVE_CACHE_MB``
    MiB (a whole number, 1 or more), else 256 MiB; UsageError when it is something else."""
    text = environ.get(MEMORY_ENV)
    if text is None or text == "":
        return DEFAULT_MEMORY_MB * _MIB
    # (the length first: int() refuses a string of over 4,300 digits with a ValueError)
    if not (text.isascii() and text.isdigit() and len(text) <= 10) or not (
            1 <= int(text) <= 1 << 30):
        raise UsageError(f"invalid {MEMORY_ENV}={text!r}: give the MiB of loaded caches the "
                         f"server keeps (a whole number from 1), or unset it for "
                         f"{DEFAULT_MEMORY_MB}")
    return int(text) * _MIB


class CacheStamp(NamedTuple):
    dir_dev: int
    dir_ino: int
    dir_mtime_ns: int
    manifest_ino: int
    manifest_size: int
    manifest_mtime_ns: int
    manifest_ctime_ns: int


def cache_stamp(cache_dir: Path) -> CacheStamp | None:
    """The stamp of ``cache_dir``, or None when it cannot be taken (then nothing is cached)."""
    try:
        d = os.stat(cache_dir)
        m = os.stat(os.path.join(cache_dir, MANIFEST))
    except (OSError, ValueError):
        return None
    return CacheStamp(
        d.st_dev, d.st_ino, d.st_mtime_ns, m.st_ino, m.st_size, m.st_mtime_ns, m.st_ctime_ns
    )


def release_freed_memory() -> None:
    """Give the memory freed since the last call back to the system, where the C library
    can (glibc's ``malloc_trim``): loading a large cache frees as much as it keeps, in every
    thread's heap, and without this the process's RSS keeps it (measured, 5 caches of the
    30 MB corpus asked in turn: steady RSS 306-350 -> 285 MiB, one cache 125 -> 105)."""
    global _trim
    if _trim is None:
        try:
            import ctypes

            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (ImportError, OSError, AttributeError):  # (a Python built without ctypes)
            _trim = False
    if _trim:
        _trim(0)


_trim: Any = None  # malloc_trim once looked up, False where there is none


class _Entry(NamedTuple):
    stamp: CacheStamp
    value: Any
    size: int


class WarmCaches:
    """Thread-safe memo of loaded caches keyed by directory and kind, checked by stamp;
    at most ``max_entries`` values and, beyond the newest, ``max_bytes`` of them.

    Not ``functools.lru_cache`` (bounded by count only, and blind to a rebuilt cache) nor
    ``cachetools.LRUCache(getsizeof=...)`` (bounded by size, but it refuses a value larger
    than the bound, which here must be kept, and it would still need the stamp check
    and the load outside the lock around it): the LRU itself is an ``OrderedDict``.
    """

    def __init__(self, max_entries: int = 32, max_bytes: int | None = None) -> None:
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, Hashable], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.loads = 0
        self.hits = 0
        self.evictions = 0
        self.bytes = 0  # the estimated sizes of the values kept

    def get(self, cache_dir: Path, kind: Hashable, load: Callable[[Path], T],
            size: Callable[[T], int] | None = None) -> T:
        """``load(cache_dir)``, or the value it gave last time if the cache is unchanged;
        ``size(value)``: its estimated bytes in memory (0 when not given)."""
        key = (os.fspath(cache_dir), kind)
        stamp = cache_stamp(cache_dir)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and stamp is not None and entry.stamp == stamp:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry.value
            # A stale generation is let go before its successor loads, so the two are not
            # held at once (a call still using it keeps it until it finishes).
            self._drop(key)
        del entry
        value = load(cache_dir)
        self.loads += 1
        release_freed_memory()  # the load's temporaries
        if stamp is not None and cache_stamp(cache_dir) == stamp:
            nbytes = size(value) if size is not None else 0
            with self._lock:
                self._drop(key)
                self._entries[key] = _Entry(stamp, value, nbytes)
                self.bytes += nbytes
                evictions = self.evictions
                self._evict(key)
            if self.evictions != evictions:
                release_freed_memory()  # what the evicted values held
        return value

    def _evict(self, newest: tuple[str, Hashable]) -> None:
        """Drop least recently used entries until both bounds hold (never ``newest``); for
        the memory bound, only entries that count towards it."""
        entries = self._entries
        while len(entries) > self._max_entries:
            self._drop(next(iter(entries)))
            self.evictions += 1
        if self._max_bytes is None:
            return
        while self.bytes > self._max_bytes:
            victim = next((k for k, e in entries.items() if e.size and k != newest), None)
            if victim is None:
                return
            self._drop(victim)
            self.evictions += 1

    def _drop(self, key: tuple[str, Hashable]) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.bytes -= entry.size

    def discard(self, cache_dir: Path, kind: Hashable) -> None:
        """Forget one entry (its value turned out stale while being used)."""
        with self._lock:
            self._drop((os.fspath(cache_dir), kind))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
