"""The library API: build, list, inspect, resolve and delete caches, install git hooks.

Every door (the ``doc-index`` and ``context`` CLIs, the MCP server, the git hook, the
demo) is a thin layer over these functions and the modules they call. Nothing here
prints or exits: results are Python objects, failures are :class:`~doc_index.foundation.errors.
DocIndexError` subclasses (a ``code`` and its exit code in one table). ``root`` defaults
to ``$DOC_INDEX_ROOT``, else the per-user data folder (``store.roots``); an empty one is
a UsageError (it would name the current directory).

Imports are made inside the functions: each door loads only what its command needs
(tests/test_import_rules.py), and ``import doc_index`` stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .foundation.errors import CacheMissing

if TYPE_CHECKING:
    from .search.cache_details import CacheDetails
    from .search.results import Answer, CacheEntry, CacheInfo
    from .store.index_store import BuildReport, Progress

def _root(root: Path | str | None) -> Path:
    from .store.roots import checked_root, default_root

    if isinstance(root, str):
        return checked_root(root)
    return root if root is not None else default_root()


def _cache_dir(root: Path, name: str) -> Path:
    """The checked directory of cache ``name``; MissingCache naming it (and the closest
    names) or the root otherwise."""
    from .foundation.errors import ContextError
    from .missing_cache import missing_cache
    from .store.cache_paths import resolve_cache_name

    try:
        return resolve_cache_name(root, name)
    except ContextError as exc:
        if exc.code != "cache_missing":
            raise
        raise missing_cache(root, name, exc) from None


def build(
    source: str | Path,
    *,
    root: Path | str | None = None,
    name: str | None = None,
    ref: str | None = None,
    full: bool = False,
    replace: bool = False,
    max_file_bytes: int | None = None,
    progress: Progress | None = None,
    subdir: str | None = None,
    everything: bool = False,
) -> BuildReport:
    """Build or update the cache of ``source``: a local directory (a git work tree is
    read as git sees it) or a git URL / bare repository (``ref``: the branch, tag or
    commit). The cache is named exactly ``name``, else from the source (README "Cache
    names": ``<owner>-<name>`` for a git URL or a work tree with an ``origin``,
    ``@<ref>`` for a ``ref``, ``local-<parent>-<folder>`` for a plain folder).
    Re-running it is the incremental rebuild; ``full`` re-parses every file. A cache of
    that name built from another source is refused (UsageError) unless ``replace``.
    Files over ``max_file_bytes`` (default 10 MB, at most 1 GiB) are skipped.
    ``progress(done, total)`` is called while files are parsed. A git source and a work
    tree's top index their documentation (README "What is indexed"); ``subdir`` (a
    folder of the source; a URL's ``#P``) or ``everything`` (every file) choose otherwise.
    ``ref`` applies to git URLs and bare repositories only (UsageError otherwise). A
    source with nothing to index is a UsageError (``NothingToIndex``), nothing written.

    Raises UsageError (a bad name or limit, a cache too large), GitSourceError, or an
    OSError; a failed build leaves the live cache as it was.
    """
    from .store.index_store import IndexStore
    from .store.sources.choose import build_source
    from .store.sources.walk import DEFAULT_MAX_BYTES

    return build_source(
        IndexStore(_root(root)), str(source), name=name, ref=ref, full=full, replace=replace,
        max_bytes=DEFAULT_MAX_BYTES if max_file_bytes is None else max_file_bytes,
        progress=progress, subdir=subdir, everything=everything,
    )


def list_caches(root: Path | str | None = None) -> list[CacheEntry]:
    """The caches under ``root``, in the order of their names' UTF-8 bytes; MissingCache
    naming ``root`` when it is not a directory."""
    from .missing_cache import check_root
    from .search import tools

    checked = _root(root)
    check_root(checked)
    return tools.cache_entries(checked)


def inspect(name: str, *, root: Path | str | None = None) -> CacheInfo:
    """Version, document count, size and validity of cache ``name``."""
    from .search import tools

    return tools.cache_info(_cache_dir(_root(root), name))


def describe_caches(root: Path | str | None = None) -> list[CacheDetails]:
    """Every cache under ``root`` (``list_caches``'s order) with its source, ref, commit,
    sections, tokens, size and build time; a damaged cache is described as invalid."""
    from .search.cache_details import cache_details

    checked = _root(root)
    return [cache_details(checked, entry.path) for entry in list_caches(checked)]


def describe(name: str, *, root: Path | str | None = None) -> CacheDetails:
    """``describe_caches``'s entry of cache ``name``; MissingCache (as ``inspect``) when
    there is no such cache."""
    from .search.cache_details import cache_details

    checked = _root(root)
    _cache_dir(checked, name)
    return cache_details(checked, name)


def resolve(name: str, query: str, budget: int | str, *,
            root: Path | str | None = None) -> Answer:
    """The sections of cache ``name`` that answer ``query`` best within ``budget``
    tokens, best first, with what was selected.

    ``budget`` is an int in [0, 10 000 000], or that number as command-line text (an
    optional ``-`` and ASCII digits); anything else is ContextError ``invalid_budget``.
    A name that is no cache under ``root`` is ``cache_missing`` (MissingCache), checked
    first.
    """
    from .foundation.errors import ContextError, spec_message
    from .missing_cache import missing_cache
    from .search import tools
    from .search.budget import parse_budget

    checked = _root(root)
    cache_dir = _cache_dir(checked, name)
    try:
        return tools.answer(cache_dir, query, parse_budget(budget) if isinstance(budget, str)
                            else budget)
    except ContextError as exc:  # a directory with no manifest, or gone meanwhile: say so
        if exc.code != "cache_missing" or exc.message != spec_message(exc.code):
            raise
        raise missing_cache(checked, name, exc) from None


def delete(name: str, *, root: Path | str | None = None) -> None:
    """Delete cache ``name``: a directory doc-index can tell is a cache (a doc-index or
    Context Engine v0 manifest, or the mark a build left of a cache damaged since:
    ``store.cache_marks``), its spare generation and lock. MissingCache (as ``inspect``)
    when there is no such cache; ``DeleteRefused`` (a UsageError), with nothing touched, when
    the name is anything else under the root."""
    from .missing_cache import missing_cache
    from .store.index_store import IndexStore

    root = _root(root)
    _cache_dir(root, name)
    if not IndexStore(root).delete_index(name):  # deleted meanwhile by another process
        raise missing_cache(root, name, CacheMissing(detail="deleted meanwhile"))


def install_hooks(repo: Path | str = ".", *, root: Path | str | None = None,
                  name: str | None = None, subdir: Path | str | None = None) -> list[str]:
    """Install the git hooks that rebuild ``repo``'s cache under ``root`` after a pull,
    checkout or rebase; one line per hook saying what was done. The hooks build the
    checkout, or its folder ``subdir``, as ``build`` would, into the cache ``name`` (else
    the default name); a build the hook would refuse (that name holds another source's
    cache) is refused now, with nothing installed."""
    from .hooks import install_hooks as install

    return install(Path(repo), _root(root), name=name,
                   subdir=None if subdir is None else str(subdir))


def uninstall_hooks(repo: Path | str = ".") -> list[str]:
    """Remove the hooks, putting back any hook that was there before; one line per hook."""
    from .hooks import uninstall_hooks as uninstall

    return uninstall(Path(repo))
