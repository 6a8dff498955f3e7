"""The one check for every path that comes from a source.

A source (a walked directory, a git tree, a manifest being carried forward) names files
with repository-relative POSIX paths, and the store joins those names to the staging and
cache directories. A name chosen by an attacker (a git tree entry written with
``git hash-object -t tree --literally``, say) must never take such a join out of the
directory: every source path goes through :func:`path_problem` once, before any join,
and a path with a problem is skipped and reported, never repaired.

A name holding a control character (a newline, ESC, any C0 or C1 control, DEL) or a line
or paragraph separator is refused too: such a name, stored in a cache, would reach every
line-oriented reader of it (a newline splits a listing line, an ESC sequence drives a
terminal). Printed lines escape names anyway (``printable``); this keeps them out of
caches. Readers of a cache written before this rule (``check_controls=False``) still
accept them: the escaping covers what such a cache holds, and its next build skips them.
"""

from __future__ import annotations

import re

MAX_PATH_BYTES = 4096  # PATH_MAX on Linux
MAX_COMPONENT_BYTES = 255  # NAME_MAX on Linux
_CONTROL = re.compile("[\x01-\x1f\x7f-\x9f\u2028\u2029]")


def path_problem(path: object, *, check_controls: bool = True) -> str | None:
    """Why ``path`` is not a safe repository-relative path, or None when it is.

    Safe: a non-empty ``str`` of ``/``-separated components, relative (no leading ``/``),
    no empty, ``.`` or ``..`` component, no NUL or backslash (a separator on other
    systems), valid UTF-8, within the system's path and name length limits, and (unless
    ``check_controls`` is false) no control character or line separator."""
    if not isinstance(path, str) or not path:
        return "empty file name"
    if "\0" in path:
        return "NUL in file name"
    if "\\" in path:
        return "backslash in file name"
    if path.startswith("/"):
        return "absolute file name"
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        return "file name is not UTF-8"
    if len(encoded) > MAX_PATH_BYTES:
        return "file name too long"
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return "file name leaves its directory" if part == ".." else "empty or '.' component"
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            return "file name component too long"
    if check_controls and _CONTROL.search(path):
        return "control character in file name"
    return None


def is_safe_path(path: object) -> bool:
    """True when :func:`path_problem` finds nothing wrong with ``path``."""
    return path_problem(path) is None


__all__ = ["MAX_COMPONENT_BYTES", "MAX_PATH_BYTES", "is_safe_path", "path_problem"]
