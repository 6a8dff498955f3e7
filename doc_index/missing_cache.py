"""The errors for people when a named cache or the cache root is not there.

Each names what is missing and the way out; the closest existing cache names are
suggested. Only the library (``DocIndex.cache``, so ``doc-index``) raises these; the
``context`` CLI and MCP keep the spec's canonical ``Cache does not exist``.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from .foundation.errors import CacheMissing, ContextError
from .foundation.printable import printable

MAX_SUGGESTIONS = 3
# difflib.get_close_matches's default: below it, suggestions are mostly noise.
_CUTOFF = 0.6


def check_root(root: Path) -> None:
    """CacheMissing naming ``root`` unless it is (a symlink to) a directory."""
    if os.path.isdir(root):
        return
    shown = printable(os.path.abspath(root))
    if os.path.lexists(root):
        raise CacheMissing(f"cache root {shown} is not a directory; pass --root DIR")
    raise CacheMissing(f"cache root {shown} does not exist; build a cache first "
                       f"(doc-index build SOURCE --root {shown}) or pass --root DIR")


def missing_cache(root: Path, name: str, refused: ContextError) -> CacheMissing:
    """The error for cache ``name`` that ``resolve_cache_name`` refused with ``refused``."""
    from .search import operations  # lazy: defers search.operations (+23 modules) to the call

    check_root(root)
    names = [entry.path for entry in operations.cache_entries(root)]
    shown_root = printable(os.path.abspath(root))
    if name in names:  # there, but refused (a link out of the root, no manifest, ...)
        close = close_names(name, [other for other in names if other != name])
        also = f"; did you mean: {', '.join(map(printable, close))}?" if close else ""
        return CacheMissing(f"cache {_quoted(name)} under {shown_root} cannot be used: "
                            f"{printable(str(refused))}{also}")
    where = f"no cache named {_quoted(name)} under {shown_root}"
    if not names:
        return CacheMissing(f"{where}; it holds no cache yet (doc-index build SOURCE "
                            f"--root {shown_root} makes one)")
    close = close_names(name, names)
    if close:
        return CacheMissing(f"{where}; did you mean: {', '.join(map(printable, close))}? "
                            "(doc-index list shows them)")
    return CacheMissing(f"{where} (doc-index list shows the caches there)")


def close_names(name: str, names: list[str]) -> list[str]:
    """At most three of ``names`` closest to ``name``, best first (ties by name).

    A name is compared whole and by each tail after a ``-`` (``pallets-flask`` also as
    ``flask``), since the cache names carry an owner or ``local-`` prefix the user may
    not type."""
    scored = []
    for candidate in names:
        parts = candidate.split("-")
        tails = ["-".join(parts[i:]) for i in range(len(parts))]
        score = max(difflib.SequenceMatcher(None, name, tail).ratio() for tail in tails)
        if score >= _CUTOFF:
            scored.append((-score, candidate))
    return [candidate for _, candidate in sorted(scored)[:MAX_SUGGESTIONS]]


def _quoted(name: str) -> str:
    return f"'{name}'" if name.isprintable() else printable(name)
