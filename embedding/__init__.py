"""Answers by meaning (the optional ``semantic`` extra): a small sentence-embedding model,
int8 section vectors kept beside a cache, and their fusion with the lexical ranking.

Nothing here is imported unless the extra is used: without ``onnxruntime``, ``tokenizers``
and a model file, doc-index answers exactly as it does without this package.

- :mod:`.model`: which model file, where it is found, and the embedder (texts in, unit
  vectors out);
- :mod:`.codes`: unit vectors as int8 codes, and their integer similarities;
- :mod:`.fetch`: ``doc-index model fetch``: the pinned file from its publisher;
- :mod:`.vectors`: the vector store of a root (by section text) and a cache's sidecar;
- :mod:`.fusion`: the lexical ranking and the query's similarity, fused.

``docs/decisions/answers-by-meaning.md`` records the measurements behind every constant.
"""
