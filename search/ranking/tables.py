"""What the rules derive from a loaded cache once (not per query), and the page runs.

Remembered in the search index's ``memo`` (dropped with the loaded cache) under a key
that names what it depends on; the memo is emptied when it grows past 16 entries (a
tuning run trying many parameters).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

from ...store.native_cache import NativeCache

T = TypeVar("T")
_MEMO_ENTRIES = 16


def per_cache(cache: NativeCache, key: Hashable, build: Callable[[], T]) -> T:
    """``build()``, once per loaded cache and ``key``."""
    memo = cache.index.memo
    got = memo.get(key)
    if got is None:
        if len(memo) > _MEMO_ENTRIES:
            memo.clear()
        got = memo[key] = build()
    return got


class Files:
    """The pages (files) of a cache: a file's sections are contiguous. ``of``: each
    section's file number; ``length``: each file's body terms."""

    __slots__ = ("of", "length")

    def __init__(self, of: list[int], length: list[int]) -> None:
        self.of, self.length = of, length


def files(cache: NativeCache) -> Files:
    """Each section's file number and each file's length (per loaded cache)."""
    return per_cache(cache, ("files",), lambda: _files(cache))


def _files(cache: NativeCache) -> Files:
    file_of: list[int] = []
    file_len: list[int] = []
    last = None
    number = -1
    for name, length in zip(cache.sections.files, cache.index.lens[2]):
        if name != last:
            file_len.append(0)
            last = name
            number += 1
        file_of.append(number)
        file_len[number] += length
    return Files(file_of, file_len)
