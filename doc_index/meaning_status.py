"""Whether answers use meaning here, and why not: one answer for every door.

Answers by meaning (docs/semantic.md) need, cheapest check first: answers by meaning not
turned off (``DOC_INDEX_SEMANTIC``), the semantic extra installed, and a model file found
(``--model``, ``DOC_INDEX_MODEL_DIR``, the user cache). Then a cache is answered by
meaning when it holds vectors (``search.meaning``); without them, by words. Nothing is
imported or read beyond a few ``stat`` calls: the MCP server asks at start, to say it in
its instructions and tool descriptions.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class MeaningStatus(NamedTuple):
    """``on``: answers use meaning where a cache holds vectors (``model`` is the file);
    otherwise ``why`` says what is missing, in words for a person."""

    on: bool
    why: str
    model: Path | None = None


def meaning_status(model_dir: Path | None = None) -> MeaningStatus:
    """The status with the model folder ``model_dir`` (None: the environment's, else the
    user cache's)."""
    from .embedding.model import SEMANTIC_ENV, enabled
    from .foundation.errors import ModelError
    from .meaning_build import extra_installed

    if not enabled():
        return MeaningStatus(False, f"{SEMANTIC_ENV} turns answers by meaning off")
    if not extra_installed():
        return MeaningStatus(False, "the semantic extra is not installed "
                                    "(pip install 'doc-index[semantic]')")
    from .embedding.model import find_model

    try:
        model = find_model(model_dir)
    except ModelError as exc:
        return MeaningStatus(False, str(exc))
    return MeaningStatus(True, "the semantic extra and a model are there", model)


__all__ = ["MeaningStatus", "meaning_status"]
