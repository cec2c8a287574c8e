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
#: all-MiniLM-L6-v2's architecture (the base package's config.json), so that no base files are needed.
CONFIG = {"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
          "intermediate_size": 1536, "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 2,
          "layer_norm_eps": 1e-12, "pad_token_id": 0, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}


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
    """reader_train.Reader with the weights of ``path`` (no base files read)."""
    import torch
    from transformers import BertConfig, BertModel

    class Reader(torch.nn.Module):  # the same modules and names as reader_train.build's
        def __init__(self):
            super().__init__()
            self.encoder = BertModel(BertConfig(**CONFIG), add_pooling_layer=False)
            self.head = torch.nn.Linear(CONFIG["hidden_size"], 1)

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            return self.head(hidden[:, 0]).squeeze(-1)

    model = Reader()
    weights = state_dict(path)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    missing = [m for m in missing if not m.endswith(("position_ids", "token_type_ids"))]  # buffers, not weights
    if missing or unexpected:
        raise ValueError(f"{path}: weights missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", type=Path, default=ONNX)
    args = ap.parse_args()
    import numpy as np
    import onnxruntime as ort
    import torch
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(HERE.parent / "assistant" / "data" / "minilm" / "tokenizer.json"))
    tok.enable_truncation(max_length=160, strategy="only_second")
    tok.enable_padding()
    pairs = [("federated learning with differential privacy", "We study federated learning where clients keep "
              "their data and share noisy updates under differential privacy."),
             ("speculative decoding", "We propose a diffusion model for image inpainting guided by a classifier."),
             ("how many text-figure pairs does FigureBench contain?", "FigureBench holds 3,300 text-figure pairs.")]
    enc = tok.encode_batch(pairs)
    feeds = {"input_ids": np.asarray([e.ids for e in enc], dtype=np.int64),
             "attention_mask": np.asarray([e.attention_mask for e in enc], dtype=np.int64),
             "token_type_ids": np.asarray([e.type_ids for e in enc], dtype=np.int64)}
    ort_logits = ort.InferenceSession(str(args.onnx), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    model = reader_from_onnx(args.onnx).eval()
    with torch.no_grad():
        torch_logits = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).numpy()
    gap = float(np.abs(ort_logits.reshape(-1) - torch_logits.reshape(-1)).max())
    print(json.dumps({"onnx": [round(float(x), 3) for x in ort_logits.reshape(-1)],
                      "torch": [round(float(x), 3) for x in torch_logits.reshape(-1)], "max_gap": round(gap, 4)}))
    return 0 if gap < 0.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
