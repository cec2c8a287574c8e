"""The question reader's encoder: all-MiniLM-L6-v2's query side fine-tuned here (training/criteria_train.py) so that
what a question or `which` criterion asks for scores the papers that are about it above the papers that only share
its words.

The papers keep the chunk vectors the shipped embedder made at ingest; this model embeds only the question, so
nothing is re-embedded and an index built before it works unchanged. Trained on 829 labelled criteria over 4,300
arXiv training papers (never a held-out set or corpus), it scores the papers meeting 176 criteria it never saw above
the rest of their corpora with AUC 0.941, where the embedder's own query vector gives 0.858 (docs/reader.md). An
area question's ranking (assistant/qa/answer.py, ``_area_order``) and the parts model (assistant/search/parts.py)
read its cosines; the relevance and answerable models do not (measured, not adopted: research log, ninth session).

The weights (``assistant/data/query_encoder.npz``, 23.5 MB, the command and inputs that made them in its
``provenance`` and in MANIFEST.json) are int8, one scale per row, with float biases and layer norms; the forward
pass is numpy (a question is a dozen tokens: a few ms, no onnxruntime session to open; the matrices are scaled back
to float once, on first use, ~42 MB; the word embeddings stay int8, read a row at a time). It reads only the
local MiniLM's vectors: :meth:`assistant.search.retrieve.Retriever.asked_vector` uses it for an index that
embedder built and the query's own vector for any other.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

LAYERS = 6
HEADS = 12
EPS = 1e-12
_lock = threading.Lock()


def weights_path() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "query_encoder.npz"


def available() -> bool:
    """Whether the encoder's weights are installed (the package ships them)."""
    return weights_path().exists()


@lru_cache(maxsize=2)
def _weights(path: Path) -> dict:
    """The weights, each int8 matrix scaled back to float32 once (~42 MB; the word embeddings stay int8, read a row
    at a time)."""
    import numpy as np

    with _lock, np.load(path, allow_pickle=False) as npz:
        w = {name: npz[name] for name in npz.files}
    for name in [n[:-2] for n in w if n.endswith(".q") and not n.startswith("embeddings.word_embeddings")]:
        w[name] = w.pop(name + ".q").astype("float32") * w.pop(name + ".scale")[:, None]
    return w


def _layer_norm(x: np.ndarray, w: dict, name: str) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / (var + EPS) ** 0.5 * w[name + ".weight"] + w[name + ".bias"]


def _dense(x: np.ndarray, w: dict, name: str) -> np.ndarray:
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def _attention(h: np.ndarray, w: dict, prefix: str, spans: list[slice]) -> np.ndarray:
    """Self-attention within each text: ``h`` holds the tokens of several texts one after another, ``spans``
    where each text's are (the dense layers run once over all of them)."""
    import numpy as np

    n, d = h.shape
    size = d // HEADS
    q, k, v = (_dense(h, w, f"{prefix}.attention.self.{p}").reshape(n, HEADS, size).transpose(1, 0, 2)
               for p in ("query", "key", "value"))
    contexts = []
    for span in spans:
        scores = q[:, span] @ k[:, span].transpose(0, 2, 1) / np.sqrt(size)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        contexts.append((scores / scores.sum(-1, keepdims=True)) @ v[:, span])
    context = np.concatenate(contexts, axis=1)
    return _dense(context.transpose(1, 0, 2).reshape(n, d), w, f"{prefix}.attention.output.dense")


def encode(text: str, path: Path | None = None) -> np.ndarray:
    """The question's (or criterion's) unit vector (384 floats), comparable with the index's chunk vectors
    (``path``: other weights than the shipped ones: a fold's, or the file criteria_train.py just wrote)."""
    return encode_many([text], path)[0]


def encode_many(texts: list[str], path: Path | None = None) -> np.ndarray:
    """The unit vectors of several texts (one row each) in one forward pass, each as :func:`encode` gives it to
    float rounding (one text: bit for bit). Fifteen short texts together: 0.27 s CPU, one at a time 0.39 s."""
    import numpy as np

    from assistant.embed.embedder import load_tokenizer
    from assistant.embed.npgraph import erf

    w = _weights(path or weights_path())
    tokenizer = load_tokenizer()
    encoded = [np.asarray(tokenizer.encode(text).ids) for text in texts]
    ids = np.concatenate(encoded)
    ends = np.cumsum([len(e) for e in encoded])
    spans = [slice(int(end - len(e)), int(end)) for e, end in zip(encoded, ends)]
    positions = np.concatenate([np.arange(len(e)) for e in encoded])
    words = w["embeddings.word_embeddings.weight.q"][ids].astype("float32")
    h = (words * w["embeddings.word_embeddings.weight.scale"][ids][:, None]
         + w["embeddings.position_embeddings.weight"][positions] + w["embeddings.token_type_embeddings.weight"][0])
    h = _layer_norm(h, w, "embeddings.LayerNorm")
    for i in range(LAYERS):
        prefix = f"encoder.layer.{i}"
        h = _layer_norm(h + _attention(h, w, prefix, spans), w, f"{prefix}.attention.output.LayerNorm")
        inner = _dense(h, w, f"{prefix}.intermediate.dense")
        inner = 0.5 * inner * (1.0 + erf(inner / np.sqrt(2.0)))
        h = _layer_norm(h + _dense(inner, w, f"{prefix}.output.dense"), w, f"{prefix}.output.LayerNorm")
    pooled = [h[span].mean(0) for span in spans]
    return np.stack([(p / max(float(np.linalg.norm(p)), 1e-12)).astype(np.float32) for p in pooled])
