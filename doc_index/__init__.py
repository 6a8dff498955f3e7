"""doc-index: a section-level documentation cache for AI agents.

The code lives in three subpackages, following the data:
``indexer`` (source text -> sections), ``store`` (sections <-> cache directory) and
``server`` (cache -> answers: selection, the three tools, MCP, the ``context`` CLI).
"""

__version__ = "0.1.0"
