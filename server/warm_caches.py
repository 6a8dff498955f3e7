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
cache that is repaired is seen on the next call. Entries are LRU-bounded.

Trade-off: a cache rewritten in place without touching the directory or its manifest
(not something the store or ``context build`` does) is not noticed until evicted.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")

MANIFEST = "manifest.json"


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


class WarmCaches:
    """Thread-safe memo of loaded caches keyed by directory and kind, checked by stamp."""

    def __init__(self, max_entries: int = 32) -> None:
        self._max_entries = max_entries
        self._entries: OrderedDict[tuple[str, Hashable], tuple[CacheStamp, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.loads = 0
        self.hits = 0

    def get(self, cache_dir: Path, kind: Hashable, load: Callable[[Path], T]) -> T:
        """``load(cache_dir)``, or the value it gave last time if the cache is unchanged."""
        key = (os.fspath(cache_dir), kind)
        stamp = cache_stamp(cache_dir)
        if stamp is not None:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None and entry[0] == stamp:
                    self._entries.move_to_end(key)
                    self.hits += 1
                    return entry[1]
        value = load(cache_dir)
        self.loads += 1
        if stamp is not None and cache_stamp(cache_dir) == stamp:
            with self._lock:
                self._entries[key] = (stamp, value)
                self._entries.move_to_end(key)
                while len(self._entries) > self._max_entries:
                    self._entries.popitem(last=False)
        return value

    def discard(self, cache_dir: Path, kind: Hashable) -> None:
        """Forget one entry (its value turned out stale while being used)."""
        with self._lock:
            self._entries.pop((os.fspath(cache_dir), kind), None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
