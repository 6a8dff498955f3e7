"""The three tools over a cache path: ``answer`` (context.resolve), ``cache_info``
(context.inspect_cache) and ``cache_entries`` (context.list_caches) return typed results
(``results``) for the library (``doc_index.library``), which every door calls. All raise
ContextError and nothing else: an OSError becomes ``io_error``, any other unexpected
exception ``internal_error``.

``resolve`` reads both cache kinds: a manifest with ``build_config`` is a Context Engine
v0 cache (``v0_cache``/``v0_selection``), one with ``index_version`` a native doc-index
cache (``native_cache``/``search.native_selection``, imported only when needed to keep
start-up fast).
"""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ..foundation.cache_names import MANIFEST_NAME as MANIFEST
from ..foundation.cache_names import STAGING_DIR
from ..foundation.errors import (
    CacheInvalid,
    CacheMissing,
    CacheReplaced,
    ContextError,
    IoError,
    QueryError,
    as_context_error,
)
from ..foundation.strict_json import parse_json
from ..store.cache_files import read_regular, swapped
from ..store.manifest import MAX_MANIFEST_BYTES, manifest_head
from ..store.v0_cache import V0Cache, load_v0_cache
from .budget import check_budget
from .results import Answer, ByMeaning, CacheEntry, CacheInfo
from .v0_selection import select_v0

if TYPE_CHECKING:
    from .warm_caches import WarmCaches

# A native cache swapped by a rebuild while it is loaded or read is loaded again, this
# many times (a reader can lose several races to back-to-back rebuilds on a busy machine).
_NATIVE_ATTEMPTS = 10
_WARM_KIND = "resolve"

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _spec_errors(tool: Callable[_P, _R]) -> Callable[_P, _R]:
    """Let ContextError through; turn OSError into io_error and anything else internal_error."""

    @functools.wraps(tool)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return tool(*args, **kwargs)
        except ContextError:
            raise
        except Exception as exc:
            raise as_context_error(exc) from exc

    return wrapper


@_spec_errors
def answer(
    cache_dir: Path, query: str, budget: object, *, warm: WarmCaches | None = None,
    meaning: ByMeaning | None = None,
) -> Answer:
    """context.resolve: the SelectionResult of ``query`` within ``budget`` tokens.

    Checks the budget first, then the cache: no directory or no ``manifest.json`` is
    cache_missing; a manifest that does not parse or is of neither kind cache_invalid.
    With ``warm`` (the MCP server's), the loaded cache is reused while its stamp holds.
    ``meaning``: answer a native cache that holds vectors by meaning too (``search.meaning``).
    """
    checked = check_budget(budget)
    if not isinstance(query, str):
        raise QueryError(detail="query must be a string")
    try:
        query.encode("utf-8")  # lone surrogates: argv bytes that were not UTF-8
    except UnicodeEncodeError:
        raise QueryError(detail="query is not valid UTF-8") from None

    def resolved(cache: Any) -> Answer:
        if isinstance(cache, V0Cache):
            return Answer(**select_v0(cache.documents, query, checked))
        from .native_selection import select  # lazy: dataclasses and inspect cost a build ~30 ms

        if meaning is None:
            return Answer(**select(cache, query, checked))
        outcome: list[str] = []
        result = select(cache, query, checked, meaning=meaning._replace(outcome=outcome))
        return Answer(**result, meaning=outcome[0] if outcome else None)

    return with_loaded(cache_dir, resolved, warm)


spec_errors = _spec_errors  # for the other tools over a cache path (search.navigation)


def with_loaded(cache_dir: Path, use: Callable[[Any], _R],
                warm: WarmCaches | None = None) -> _R:
    """``use(cache)`` on the cache loaded from ``cache_dir`` (a :class:`V0Cache` or a
    ``NativeCache``, warm in ``warm`` as ``answer`` keeps it), loaded again when a rebuild
    swaps the generation meanwhile: ``use`` sees one generation, never a mix."""
    _require_directory(cache_dir)
    for _ in range(_NATIVE_ATTEMPTS):
        try:
            cache = (
                load_for_resolve(cache_dir)
                if warm is None
                else warm.get(cache_dir, _WARM_KIND, load_for_resolve, size=memory_bytes)
            )
        except CacheReplaced:
            continue  # the generation was deleted while it loaded: load the new one
        try:
            return use(cache)
        except CacheReplaced:
            if warm is not None:
                warm.discard(cache_dir, _WARM_KIND)
        finally:
            if warm is None and not isinstance(cache, V0Cache):
                cache.close()
    raise IoError(detail="the cache kept being replaced while it was read")


def memory_bytes(cache: Any) -> int:
    """What a cache loaded by :func:`load_for_resolve` holds in memory, estimated (a warm
    server's memory budget counts it): a v0 cache's document texts and ids, a native
    cache's own estimate."""
    if isinstance(cache, V0Cache):
        return sum(sys.getsizeof(d.content) + 200 for d in cache.documents)
    return int(cache.memory_bytes)


def load_for_resolve(cache_dir: Path) -> Any:
    """The loaded cache behind ``cache_dir``: a :class:`V0Cache` or a ``NativeCache``."""
    dir_fd = _open_directory(cache_dir)
    try:
        data = _manifest_bytes(dir_fd)
        # A manifest in the store's layout is told native by its header alone: the native
        # loader reads and parses it once, strictly (no whole parse here first).
        head = manifest_head(data)
        native = head is not None and "index_version" in head and "build_config" not in head
        if not native:
            manifest = _parse_manifest(data)
            if isinstance(manifest, dict) and "build_config" in manifest:
                return load_v0_cache(dir_fd, manifest)
            native = isinstance(manifest, dict) and "index_version" in manifest
        # never hold two copies while the native loader reads
        data, head, manifest = b"", None, None
    finally:
        os.close(dir_fd)
    if native:
        # lazy: dataclasses and inspect cost a build ~30 ms
        from ..store.native_cache import load_native_cache

        return load_native_cache(cache_dir)
    raise CacheInvalid(detail="manifest is neither a v0 nor a native manifest")


def _open_directory(cache_dir: Path) -> int:
    """A handle on the cache directory: every file of one generation is read through it."""
    try:
        return os.open(cache_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise CacheMissing(detail="no cache directory") from None


def _manifest_bytes(dir_fd: int) -> bytes:
    try:
        # At most what a build writes: a cache's first resolve costs at most that much.
        return read_regular(dir_fd, MANIFEST, follow_symlinks=True,
                            max_bytes=MAX_MANIFEST_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        raise CacheMissing(detail="no manifest.json") from None


def _parse_manifest(data: bytes) -> Any:
    try:
        return parse_json(data)
    except ValueError:
        raise CacheInvalid(detail="manifest.json is not JSON") from None


@_spec_errors
def cache_info(cache_dir: Path) -> CacheInfo:
    """context.inspect_cache: ``cache_version, document_count, total_bytes, valid``.

    The manifest is authoritative for the first two; one that is missing, unreadable or
    unparseable gives ``""``, ``0`` and ``valid: false``. ``total_bytes`` sums the sizes of
    the regular files directly in the cache directory (no recursion, symlinks skipped);
    if a size cannot be read it is 0 and ``valid`` is false. Works on both cache kinds.
    Sizes and manifest come from one opened generation; one that a rebuild swapped out
    while it was read is read again (as ``resolve`` does), never reported invalid.
    """
    return cache_info_and_manifest(cache_dir)[0]


@_spec_errors
def cache_info_and_manifest(cache_dir: Path) -> tuple[CacheInfo, Any]:
    """:func:`cache_info` and the manifest it parsed (None when unreadable), for callers
    that show more of it (``doc-index list``) without reading it twice."""
    _require_directory(cache_dir)
    for _ in range(_NATIVE_ATTEMPTS):
        dir_fd = _open_directory(cache_dir)
        try:
            total_bytes = _regular_file_bytes(dir_fd)
            manifest = _read_manifest(dir_fd)
            cache_version, document_count, manifest_ok = _manifest_summary(manifest)
            if manifest_ok and total_bytes is not None or not swapped(cache_dir, dir_fd):
                return CacheInfo(cache_version, document_count, total_bytes or 0,
                                 manifest_ok and total_bytes is not None), manifest
        finally:
            os.close(dir_fd)
    raise IoError(detail="the cache kept being replaced while it was read")


def _regular_file_bytes(dir_fd: int) -> int | None:
    total = 0
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                return None
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
    return total


def _read_manifest(dir_fd: int) -> Any:
    try:
        return parse_json(read_regular(dir_fd, MANIFEST, follow_symlinks=True))
    except (OSError, ValueError, ContextError):  # unreadable, not JSON, not a regular file
        return None


def _manifest_summary(manifest: Any) -> tuple[str, int, bool]:
    if not isinstance(manifest, dict):
        return "", 0, False
    version = manifest.get("cache_version")
    count = manifest.get("document_count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        count = None
    return (
        version if isinstance(version, str) else "",
        0 if count is None else count,
        isinstance(version, str) and count is not None,
    )


@_spec_errors
def cache_entries(root: Path) -> list[CacheEntry]:
    """context.list_caches: the immediate subdirectories of ``root``, by UTF-8 bytes of name.

    Symlinks are not directories here; the store's staging area and names that are not
    valid UTF-8 are skipped. ``has_manifest``: ``manifest.json`` is a regular file (lstat).
    """
    _require_directory(root)
    found: list[tuple[bytes, str, bool]] = []
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.name == STAGING_DIR or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                key = entry.name.encode("utf-8")
            except UnicodeEncodeError:
                continue
            found.append((key, entry.name, has_manifest(Path(entry.path))))
    found.sort()
    return [CacheEntry(name, has) for _, name, has in found]


def has_manifest(cache_dir: Path) -> bool:
    try:
        info = os.lstat(cache_dir / MANIFEST)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return stat.S_ISREG(info.st_mode)


def _require_directory(path: Path) -> None:
    """cache_missing unless ``path`` is (a symlink to) a directory."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        raise CacheMissing() from None
    if not stat.S_ISDIR(info.st_mode):
        raise CacheMissing()
