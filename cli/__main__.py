"""``python -m doc_index.cli``: the ``doc-index`` command (what the tests and the hooks'
probes run without the console script)."""

from .command import run

run()
