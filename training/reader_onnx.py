"""The shipped int8 reader (training/models/reader/reader.onnx) read back into the torch model reader_train.py
trains, so that training can go on from it where the base's float weights are not at hand: a lent GPU machine
reaches no network, and the 91 MB base cannot travel with the tree (at most 64 MiB with what is carried).

    python training/reader_onnx.py [--onnx training/models/reader/reader.onnx]   # checks the round trip

Every weight comes back dequantized (``(q - zero_point) x scale``): the biases and LayerNorms under their torch
names; the embeddings from their ``<name>_quantized`` tensors; each matrix multiplication's weight (an
``onnx::MatMul_N`` tensor, stored input x output) by the Add that follows it, whose bias names the layer. The model
built from it scores pairs as the ONNX model does, to the error int8 activations add there (checked by ``main``).
A Gemm's weight (the head) is stored as ``<name>_Transposed``.
Runs in the training environment (torch, transformers, onnx).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ONNX = HERE / "models" / "reader" / "reader.onnx"
def _dequantized(inits: dict, base: str):
    import numpy as np

    q = inits[base + "_quantized"].astype(np.float32)
    return (q - inits[base + "_zero_point"].astype(np.float32)) * inits[base + "_scale"].astype(np.float32)


def state_dict(path: Path = ONNX) -> dict:
    """The torch state dict (name -> tensor) of the reader stored in ``path``."""
    import onnx
    import torch
    from onnx import numpy_helper

    model = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    consumers: dict[str, list] = defaultdict(list)
    for node in model.graph.node:
        for name in node.input:
            consumers[name].append(node)

    def bias_after(tensor: str, depth: int = 0) -> str | None:
        """The named bias added to what ``tensor`` flows into (through the casts and scalings of int8 products)."""
        for node in consumers.get(tensor, []):
            if node.op_type == "Add":
                named = [x for x in node.input if x.endswith(".bias") and x in inits]
                if named:
                    return named[0]
            if depth < 4 and node.op_type in ("MatMulInteger", "MatMul", "Cast", "Mul"):
                for out in node.output:
                    if found := bias_after(out, depth + 1):
                        return found
        return None

    out = {name: arr for name, arr in inits.items()
           if not name.startswith("onnx::") and not name.endswith(("_quantized", "_scale", "_zero_point"))}
    for name in inits:
        if name.endswith(".weight_quantized"):  # embeddings (Gather), quantized under their own names
            out[name.removesuffix("_quantized")] = _dequantized(inits, name.removesuffix("_quantized"))
        elif name.endswith(".weight_Transposed_quantized"):  # a Gemm's weight (the head), stored transposed
            base = name.removesuffix("_quantized")
            out[base.removesuffix("_Transposed")] = _dequantized(inits, base).T.copy()
        elif name.startswith("onnx::MatMul_") and not name.endswith(("_scale", "_zero_point")):
            base = name.removesuffix("_quantized")
            weight = _dequantized(inits, base) if name.endswith("_quantized") else inits[name]
            bias = bias_after(name)
            if bias is None:
                raise ValueError(f"{path}: no named bias follows {name}; the export's graph is not the one expected")
            out[bias.removesuffix(".bias") + ".weight"] = weight.T.copy()
    return {k: torch.from_numpy(v.copy()) for k, v in out.items()}


def reader_from_onnx(path: Path = ONNX):
    """reader_train.build's model with the weights of ``path`` (no base files read)."""
    from reader_train import build

    model = build(None)
    missing, unexpected = model.load_state_dict(state_dict(path), strict=False)
    missing = [m for m in missing if not m.endswith(("position_ids", "token_type_ids"))]  # buffers, not weights
    if missing or unexpected:
        raise ValueError(f"{path}: weights missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", type=Path, default=ONNX)
    args = ap.parse_args()
    import numpy as np
    import torch
    from reader_model import Reader
    from reader_train import make_tokenizer

    pairs = [("federated learning with differential privacy", "We study federated learning where clients keep "
              "their data and share noisy updates under differential privacy."),
             ("speculative decoding", "We propose a diffusion model for image inpainting guided by a classifier."),
             ("how many text-figure pairs does FigureBench contain?", "FigureBench holds 3,300 text-figure pairs.")]
    shipped = Reader(args.onnx.parent)
    ort_logits = np.concatenate([shipped.logits(q, [p]) for q, p in pairs])
    model = reader_from_onnx(args.onnx).eval()
    enc = make_tokenizer()([q for q, _ in pairs], [p for _, p in pairs], truncation="only_second",
                           max_length=shipped.max_tokens, padding=True, return_tensors="pt")
    with torch.no_grad():
        torch_logits = model(**enc).numpy()
    gap = float(np.abs(ort_logits.reshape(-1) - torch_logits.reshape(-1)).max())
    print(json.dumps({"onnx": [round(float(x), 3) for x in ort_logits.reshape(-1)],
                      "torch": [round(float(x), 3) for x in torch_logits.reshape(-1)], "max_gap": round(gap, 4)}))
    # int8 activations put the shipped model within ~0.5 logits of its float self; a weight read into the wrong
    # layer puts it several logits off
    return 0 if gap < 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
