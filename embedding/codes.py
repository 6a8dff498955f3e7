"""Unit vectors as int8 codes, compared by integer dot products.

A vector is kept as 384 int8 codes: each component times ``127 / (its largest absolute
component)``, rounded half to even. The similarity of two code vectors is their cosine,
``dot / sqrt(|a|^2 x |b|^2)``: the dot product and the squared lengths are exact integers
(numpy integer arithmetic, no BLAS), and the one square root and division are IEEE
float64 operations, correctly rounded on every machine. So the same codes give the same
similarities bit for bit anywhere, and a code differs between two machines only where a
float of the model's output sits on a rounding boundary.

Per-vector scaling uses the whole int8 range for every vector; a fixed global scale
clips the largest components of some vectors or wastes range on others
(``docs/decisions/answers-by-meaning.md`` has the measurements).
"""

from __future__ import annotations

from typing import Any

LIMIT = 127
CHUNK = 2048  # rows widened at a time (3 MiB of int32)


def quantize(vectors: Any) -> Any:
    """int8 codes of float vectors (rows): scaled so each row's largest component is
    +-127; a row of zeros stays zeros."""
    import numpy as np  # lazy: the model's libraries load only when answers use meaning

    v = np.asarray(vectors, dtype=np.float32)
    top = np.abs(v).max(axis=1, keepdims=True)
    scale = np.where(top > 0, np.float32(LIMIT) / np.where(top > 0, top, 1), 0)
    return np.rint(v * scale).astype(np.int8)


def squared_norms(codes: Any) -> Any:
    """Each row's squared length, as exact integers (int64)."""
    import numpy as np  # lazy: the model's libraries load only when answers use meaning

    out = np.empty(len(codes), dtype=np.int64)
    buf = np.empty((min(CHUNK, len(codes)), codes.shape[1]), dtype=np.int32)
    for start in range(0, len(codes), CHUNK):
        part = buf[:min(CHUNK, len(codes) - start)]
        np.copyto(part, codes[start:start + len(part)], casting="unsafe")
        np.einsum("ij,ij->i", part, part, out=out[start:start + len(part)], dtype=np.int64)
    return out


def dots(codes: Any, query: Any) -> Any:
    """Each row's dot product with ``query`` (int32, exact: |dot| <= 384 x 127 x 127 <
    2**31), a chunk of rows at a time: no copy of the whole table, no BLAS (whose threads
    fight over a busy machine's cores)."""
    import numpy as np  # lazy: the model's libraries load only when answers use meaning

    q = np.asarray(query, dtype=np.int32)
    out = np.empty(len(codes), dtype=np.int32)
    buf = np.empty((min(CHUNK, len(codes)), codes.shape[1]), dtype=np.int32)
    for start in range(0, len(codes), CHUNK):
        part = buf[:min(CHUNK, len(codes) - start)]
        np.copyto(part, codes[start:start + len(part)], casting="unsafe")
        np.matmul(part, q, out=out[start:start + len(part)])
    return out


def similarities(codes: Any, norms2: Any, query: Any) -> Any:
    """Cosine of each row of ``codes`` with the ``query`` codes, float64 (0 for a row of
    zeros): integer dot products, then one correctly rounded sqrt and division each."""
    import numpy as np  # lazy: the model's libraries load only when answers use meaning

    q = np.asarray(query, dtype=np.int32)
    products = dots(codes, q)
    q2 = int((q.astype(np.int64) ** 2).sum())
    denom = np.sqrt(norms2.astype(np.float64) * np.float64(q2))
    out = np.zeros(len(products), dtype=np.float64)
    np.divide(products.astype(np.float64), denom, out=out, where=denom > 0)
    return out
