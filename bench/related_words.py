"""Write ``search/ranking/related_words.txt``: each common English word's nearest words.

Usage (offline; needs ``wordllama`` and the bench extra's ``bpe-openai``, neither of which
the product needs)::

    .venv/bin/pip install wordllama
    .venv/bin/python bench/related_words.py

Vocabulary: the whole-word tokens (a space, then 3 or more ASCII lowercase letters) of the
cl100k_base BPE vocabulary, in merge order (roughly frequency order). Each is embedded with
wordllama's ``l2_supercat_256`` static model (normalized), grouped by its index term (the
project's analyzer: a stem), and a term's vector is its most frequent word's. A term's
related terms are the other terms whose cosine is at least ``MIN_COSINE``, best first, at
most ``PER_TERM``; ties by term. Floats exist only here: the product reads the written
list (see ``search/ranking/related_words.py``), never a vector, so its answers are the same on any
machine. Run it again after an analyzer change (the keys are index terms).
"""

from __future__ import annotations

import base64
import gzip
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OUT = REPO / "search" / "ranking" / "related_words.txt"
MIN_COSINE = 0.4
PER_TERM = 3
_WORD = re.compile(rb"[a-z]{3,}")
HEADER = (
    "# doc-index related words: term<TAB>related terms, best first (bench/related_words.py)\n"
    "# Derived from wordllama l2_supercat_256 (MIT License, Copyright (c) 2024 Lee Miller)\n"
    "# and the word list of the cl100k_base BPE vocabulary (OpenAI tiktoken, MIT License).\n"
)


def vocabulary() -> list[str]:
    import bpe_openai

    path = Path(bpe_openai.__file__).parent / "data" / "cl100k_base.tiktoken.gz"
    fields = gzip.decompress(path.read_bytes()).decode().split()
    ranked = sorted((int(fields[i + 1]), base64.b64decode(fields[i]))
                    for i in range(0, len(fields), 2))
    return [tok[1:].decode() for _, tok in ranked
            if tok[:1] == b" " and _WORD.fullmatch(tok[1:])]


def main() -> int:
    import numpy as np
    import wordllama
    from wordllama import WordLlama

    from doc_index.indexer.analysis import word_terms

    model = WordLlama.load(cache_dir=os.path.dirname(wordllama.__file__), disable_download=True)
    terms: dict[str, str] = {}  # term -> its first (most frequent) word
    for word in vocabulary():
        got = word_terms(word)
        if len(got) == 1 and got[0].isalpha():
            terms.setdefault(got[0], word)
    names = sorted(terms)
    vectors = model.embed([terms[t] for t in names], norm=True).astype(np.float32)
    lines = []
    for start in range(0, len(names), 2048):
        sims = vectors[start:start + 2048] @ vectors.T
        for row, i in enumerate(range(start, min(start + 2048, len(names)))):
            sims[row, i] = -1.0
            best = np.flatnonzero(sims[row] >= MIN_COSINE)
            order = sorted(best, key=lambda j, r=sims[row]: (-round(float(r[j]), 4), names[j]))
            if order:
                lines.append(f"{names[i]}\t{' '.join(names[j] for j in order[:PER_TERM])}\n")
    OUT.write_bytes((HEADER + "".join(lines)).encode())
    print(f"{OUT}: {len(lines)} terms, {OUT.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
