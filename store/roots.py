"""Where caches live by default (kept import-light: ``doc-index serve`` starts with it).

The default root is ``$DOC_INDEX_ROOT``, else the platform's per-user data folder
(``platformdirs.user_data_dir("doc-index")``: ``$XDG_DATA_HOME/doc-index``, by default
``~/.local/share/doc-index`` on Linux, ``~/Library/Application Support/doc-index`` on
macOS), never ``~/.doc-index``: jDocMunch keeps its index there, and its files would be
listed as invalid caches. The clone area of git sources (``$XDG_CACHE_HOME/doc-index/
clones``) never lies inside the root: when ``XDG_DATA_HOME`` and ``XDG_CACHE_HOME`` are
one folder, the root is ``<data>/doc-index/caches`` instead.

Caches an earlier doc-index built in ``~/.doc-index`` are never moved or deleted: a
command on the default root says where they are (:func:`old_root_note`).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ..foundation.errors import UsageError
from ..foundation.printable import printable

ROOT_ENV = "DOC_INDEX_ROOT"
APP_NAME = "doc-index"
OLD_ROOT_NAME = ".doc-index"  # the default root before platformdirs (jDocMunch's folder)


def checked_root(text: str) -> Path:
    """A root given as text (``--root``): UsageError when it is empty, which would name
    the current directory."""
    if not text:
        raise UsageError("the cache root is empty: give a directory, or leave --root out "
                         "for the default")
    return Path(text)


def default_root() -> Path:
    """``$DOC_INDEX_ROOT``, else :func:`platform_root`. UsageError when the variable is
    set but empty (it would name the current directory)."""
    env = os.environ.get(ROOT_ENV)
    if env is None:
        return platform_root()
    if not env:
        raise UsageError(f"{ROOT_ENV} is set but empty: set it to a directory, or unset it "
                         "for the default")
    return Path(env).expanduser()


def clone_area() -> Path:
    """Where git sources are cloned: the rule of ``store.sources.git.clone_area`` (kept
    here without importing it, for start-up; tests check that both agree)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "doc-index" / "clones"


def platform_root() -> Path:
    """The platform's per-user data folder for doc-index, outside the clone area."""
    from platformdirs import user_data_dir

    data = Path(os.path.abspath(user_data_dir(APP_NAME)))
    clones = Path(os.path.abspath(clone_area()))
    if _within(clones, data):  # XDG_CACHE_HOME == XDG_DATA_HOME, say: side by side
        return data / "caches"
    if _within(data, clones):
        raise UsageError(f"the default cache root {printable(str(data))} would lie in the "
                         f"clone area {printable(str(clones))}: set {ROOT_ENV} or pass --root")
    return data


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def old_root() -> Path:
    return Path.home() / OLD_ROOT_NAME


def old_root_note(root: Path) -> str | None:
    """The note a command on the default ``root`` prints when that root holds no cache
    yet and ``~/.doc-index`` holds caches an earlier doc-index built there: where they
    are and how to keep using them (``--root``) or move them (``mv``). None otherwise;
    cheap when the root has caches (one directory listing)."""
    if _has_caches(root):
        return None
    old = old_root()
    caches = _native_caches(old)
    if not caches:
        return None
    q = shlex.quote
    sources = " ".join(q(str(old / name)) for name in caches)
    count = f"{len(caches)} doc-index cache{'s are' if len(caches) > 1 else ' is'}"
    return printable(  # (the whole line escaped at once if a name needs it)
        f"note: {count} in {old}, the default root of earlier versions, not in the default "
        f"root {root}: use --root {q(str(old))} (or {ROOT_ENV}={q(str(old))}) to keep using "
        f"them, or move them: mkdir -p {q(str(root))} && mv {sources} {q(str(root))}/")


def _has_caches(root: Path) -> bool:
    from ..foundation.cache_names import STAGING_DIR

    try:
        with os.scandir(root) as entries:
            return any(e.name != STAGING_DIR and e.is_dir(follow_symlinks=False)
                       for e in entries)
    except OSError:
        return False


def _native_caches(folder: Path) -> list[str]:
    """The names of the doc-index caches directly in ``folder`` (sorted)."""
    from .cache_marks import is_native_cache

    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return sorted(name for name in names if is_native_cache(folder / name))
