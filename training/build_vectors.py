"""Build assistant/data/iclr2026_vectors.npz: the local MiniLM's vector of every text the ingest embeds from the
bundled corpus with the default settings (its chunks and its abstracts' sentences), keyed by the text's sha256
(assistant/embed/shipped.py reads it; a first run's index of the bundled corpus then embeds nothing).

    python training/build_vectors.py [--out assistant/data/iclr2026_vectors.npz]

The bundled corpus is ingested into a temporary directory as a first run does, with the table set aside: every
text the ingest hands the embedder is embedded by the model and recorded. Inputs: the corpus
(assistant/data/iclr2026/*.txt) and the model, named by the sha256 the package checks it against.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from _inputs import save_npz

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "assistant" / "data" / "iclr2026_vectors.npz"


def embedded_texts() -> dict[str, np.ndarray]:
    """Each text the bundled corpus's ingest embeds, with the vector the model gives it (no table read)."""
    from assistant.config import Settings
    from assistant.embed import embedder
    from assistant.store.ingest import ingest
    from assistant.text.corpus import load_papers

    seen: dict[str, np.ndarray] = {}

    def recorded(self, texts, on_batch=None):
        vectors = self._model.embed(texts, self.embed_batch_size, on_batch=on_batch)
        seen.update(zip(texts, vectors))
        return vectors

    embedder.LocalMiniLM.embed_array = recorded  # the model itself, never the table being rebuilt
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(index_dir=Path(tmp) / "iclr")
        if settings.embed.embedder != "minilm":
            raise SystemExit("ASSISTANT_EMBEDDER is set: unset it (the table is the local MiniLM's)")
        ingest(load_papers()[0], settings)
    return seen


def save(path: Path, seen: dict[str, np.ndarray]) -> dict:
    """Written in key order (and with fixed member dates), so the same vectors give the same bytes."""
    from assistant.embed.embedder import MINILM_ID, MINILM_SHA256
    from assistant.embed.shipped import text_key

    keyed = sorted((text_key(t), v) for t, v in seen.items())
    keys = np.frombuffer(b"".join(k for k, _ in keyed), dtype=np.uint8).reshape(len(keyed), 16)  # not "S16": it
    # drops a digest's trailing zero bytes
    vectors = np.stack([v for _, v in keyed]).astype(np.float32)
    about = {"texts": len(keyed), "dim": int(vectors.shape[1]), "model": MINILM_ID}
    arrays = {"keys": keys, "vectors": vectors, "model_sha256": np.array(MINILM_SHA256),
              "provenance": np.array(json.dumps(about))}
    save_npz(path, arrays, compressed=False)  # read by every process that embeds: no inflating
    return about


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    about = save(args.out, embedded_texts())
    print(f"{args.out}: {about['texts']} texts x {about['dim']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
