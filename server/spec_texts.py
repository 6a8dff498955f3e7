"""The three tools as the specs print them: the library's answer, in the specs' bytes.

What the spec doors send (the ``context`` CLI prints it, an MCP tool result carries it):
:func:`resolve` is ``Cache(path).resolve`` rendered by ``render.spec_json``, and so on.
Each raises the library's errors; a spec door shows only their code's canonical text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..library import Cache, DocIndex
from ..render.spec_json import answer_text, info_text, list_text

if TYPE_CHECKING:
    from ..search.warm_caches import WarmCaches


def resolve(cache_dir: Path, query: str, budget: int, pretty: bool = False, *,
            warm: WarmCaches | None = None, model: Path | None = None) -> str:
    """context.resolve's text: ``Cache.resolve`` of the cache at ``cache_dir``."""
    return answer_text(Cache(cache_dir, warm=warm, model=model).resolve(query, budget), pretty)


def inspect_cache(cache_dir: Path) -> str:
    """context.inspect_cache's text: the spec's fields of ``Cache.info``."""
    return info_text(Cache(cache_dir).info())


def list_caches(root: Path) -> str:
    """context.list_caches's text: ``DocIndex.caches``."""
    return list_text(DocIndex(root).caches())
