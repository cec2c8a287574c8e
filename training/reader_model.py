"""The reader: a cross-encoder that reads a question (or a criterion) and a passage together and gives the
probability that the passage is about it. Trained here and measured; not shipped in the package, because it did not
improve the decisions it was meant for (docs/reader.md). Used by benchmarks/reader_*.py.

The model (``training/models/reader/reader.onnx``, int8, ~23 MB) is all-MiniLM-L6-v2 fine-tuned here on arXiv
abstracts and the project's training questions (training/reader_data.py, training/reader_train.py; its
manifest.json records the commands, the seed, the data's hashes and the validation figures). It runs with
onnxruntime on the question and the first ~130 tokens of each abstract.
"""

from __future__ import annotations

import functools
import json
import math
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: Pairs scored per onnxruntime call.
BATCH = 16


def model_dir() -> Path:
    return Path(__file__).resolve().parent / "models" / "reader"


def available() -> bool:
    """Whether the reader's model is in this checkout (training/models/reader)."""
    return (model_dir() / "reader.onnx").exists()


class Reader:
    """Scores (query, passage) pairs; the session and the tokenizer are made on first use."""

    def __init__(self, path: Path | None = None):
        self.dir = path or model_dir()
        self.manifest = json.loads((self.dir / "manifest.json").read_text())
        self.max_tokens = int(self.manifest.get("max_tokens", 160))

    @functools.cached_property
    def _session(self):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # shared cores: no busy wait
        return ort.InferenceSession(str(self.dir / "reader.onnx"), options, providers=["CPUExecutionProvider"])

    @functools.cached_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(Path(str(resources.files("assistant") / "data" / "minilm" / "tokenizer.json"))))
        tok.enable_truncation(max_length=self.max_tokens, strategy="only_second")
        tok.enable_padding()  # to the longest pair of a batch
        return tok

    def logits(self, query: str, passages: list[str]) -> np.ndarray:
        import numpy as np

        out = []
        for start in range(0, len(passages), BATCH):
            pairs = [(query, p) for p in passages[start:start + BATCH]]
            enc = self._tokenizer.encode_batch(pairs)
            feeds = {"input_ids": np.asarray([e.ids for e in enc], dtype=np.int64),
                     "attention_mask": np.asarray([e.attention_mask for e in enc], dtype=np.int64),
                     "token_type_ids": np.asarray([e.type_ids for e in enc], dtype=np.int64)}
            out.append(self._session.run(None, feeds)[0].reshape(-1))
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)

    def probabilities(self, query: str, passages: list[str]) -> np.ndarray:
        """P(passage is about query) for each passage."""
        import numpy as np

        return 1.0 / (1.0 + np.exp(-self.logits(query, passages).astype(np.float64)))


@functools.lru_cache(maxsize=1)
def reader() -> Reader | None:
    """The trained reader (None when this checkout has none: python -m training --only reader makes it), or the one
    in the folder $READER_DIR names (a candidate measured before it replaces it)."""
    import os

    if os.environ.get("READER_DIR"):
        return Reader(Path(os.environ["READER_DIR"]))
    return Reader() if available() else None


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))
