"""Renderers: what the doors print, from the library's typed results (no reads, no writes).

``spec_json`` renders the three tools' results as the specs' bytes; ``listing`` and
``answer_text`` render ``doc-index list``/``inspect`` and ``resolve --format text``;
``build_summary`` a build's report; ``messages`` the error lines for people."""
