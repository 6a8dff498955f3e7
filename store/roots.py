"""Where caches live by default (kept import-light: ``doc-index serve`` starts with it)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "DOC_INDEX_ROOT"


def default_root() -> Path:
    """``$DOC_INDEX_ROOT``, else ``~/.doc-index``."""
    env = os.environ.get(ROOT_ENV)
    return Path(env).expanduser() if env else Path.home() / ".doc-index"
