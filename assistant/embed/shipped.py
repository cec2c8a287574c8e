"""Vectors the package ships for the texts of its bundled corpus, so that a first run's index of it embeds nothing.

The bundled corpus is package data, and so are the texts the ingest embeds from it (its chunks as the default
settings cut them, and its abstracts' sentences). ``assistant/data/iclr2026_vectors.npz`` holds the local MiniLM's
vector for each, keyed by the sha256 of the text, as ``training/build_vectors.py`` computed them with this package's
model: a user's first command then costs 2.6 s CPU instead of 24 (docs/speed.md). A text not in the table
(another corpus, other chunk settings, an edited abstract) is embedded as always. The table is used only for the
model whose sha256 it records (:data:`~assistant.embed.embedder.MINILM_SHA256`); a missing or unreadable file is
no table. Read once per process that embeds (~10 ms CPU, 1.5 MB). ``tests/test_embedder.py`` re-embeds a sample of
its texts and compares.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def table_path() -> Path:
    return Path(str(resources.files("assistant") / "data" / "iclr2026_vectors.npz"))


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()[:16]


@lru_cache(maxsize=1)
def table(model_sha256: str) -> tuple[dict[bytes, int], "np.ndarray"] | None:
    """(row of each text's key, the vectors) for the model of ``model_sha256``; None where there is none."""
    import numpy as np

    try:
        with np.load(table_path(), allow_pickle=False) as data:
            if str(data["model_sha256"]) != model_sha256:
                return None
            keys, vectors = data["keys"], np.ascontiguousarray(data["vectors"], dtype=np.float32)
    except Exception:  # noqa: BLE001  a damaged file (a truncated zip, a bad member, no key) is no table: it never
        return None  # stops an ingest, which then embeds every text
    if vectors.ndim != 2 or keys.ndim != 2 or keys.shape[1] != 16 or len(keys) != len(vectors):
        return None
    return {k.tobytes(): row for row, k in enumerate(keys)}, vectors


def forget_table() -> None:
    """Read the table again at its next use (tests that set it aside)."""
    table.cache_clear()


def split_known(texts: list[str], model_sha256: str) -> tuple[list[int], "np.ndarray | None", list[int]]:
    """(the positions of ``texts`` the table has, their vectors, the positions it has not)."""
    found = table(model_sha256) if texts else None
    if found is None:
        return [], None, list(range(len(texts)))
    rows_of, vectors = found
    rows = [rows_of.get(text_key(t)) for t in texts]
    have = [i for i, r in enumerate(rows) if r is not None]
    return have, vectors[[rows[i] for i in have]], [i for i, r in enumerate(rows) if r is None]
