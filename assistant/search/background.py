"""What machine-learning writing in general says: how many of ~18,000 arXiv ML abstracts hold a stemmed term, an
adjacent pair of terms ("specul decod") or an adjacent triple ("neural architectur search"). A question pair the
retrieved papers lack but the field writes often names a topic the corpus lacks ("speculative decoding" against a
corpus on LLM inference); a pair the field never writes is more likely the user's own wording of what a paper says
in other words.

The counts are package data (``assistant/data/background.npz``, built by ``training/build_background.py`` with
its provenance): hashed keys, so a lookup is a binary search and loading is a few milliseconds.
"""

from __future__ import annotations

import functools
import hashlib
import math
from pathlib import Path

import numpy as np

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "background.npz"
#: A pair or triple more than this share of the field's abstracts write ("large language", "neural network") is
#: the field's own vocabulary, not a topic (0.05: chosen leave one file out over 0.05, 0.10 and none; docs/decisions.md).
VOCABULARY_SHARE = 0.05


def key(text: str) -> int:
    """A term's or pair's ("a b") stable 64-bit key."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


@functools.lru_cache(maxsize=1)
def _tables() -> dict:
    """The data file's three tables (sorted keys, counts) and its provenance, read once."""
    import json

    if not DATA_FILE.exists():  # a checkout without the data: the field says nothing
        empty = (np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint32))
        return {"terms": empty, "pairs": empty, "triples": empty, "provenance": {}}
    with np.load(DATA_FILE) as z:
        return {"terms": (z["term_keys"], z["term_counts"]), "pairs": (z["pair_keys"], z["pair_counts"]),
                "triples": (z["triple_keys"], z["triple_counts"]), "provenance": json.loads(str(z["provenance"]))}


def is_vocabulary(count: int) -> bool:
    """Whether a pair or triple written by ``count`` abstracts is the field's own vocabulary
    (:data:`VOCABULARY_SHARE`)."""
    return count >= VOCABULARY_SHARE * provenance().get("abstracts", float("inf"))


def _count(table: str, text: str) -> int:
    keys, counts = _tables()[table]
    k = np.uint64(key(text))
    i = int(np.searchsorted(keys, k))
    return int(counts[i]) if i < len(keys) and keys[i] == k else 0


def term_count(term: str) -> int:
    """How many background abstracts hold the stemmed term (0 under the stored minimum)."""
    return _count("terms", term)


def pair_count(a: str, b: str) -> int:
    """How many background abstracts write the stemmed terms next to each other, in either order (an abstract
    writing both orders counts once: the table's keys are the pair in sorted order)."""
    a, b = sorted((a, b))
    return _count("pairs", f"{a} {b}")


def triple_count(a: str, b: str, c: str) -> int:
    """How many background abstracts write the three stemmed terms in a row, in this order."""
    return _count("triples", f"{a} {b} {c}")


def collocation(a: str, b: str, count: int) -> float:
    """How much more often the field writes the pair than its two terms' own frequencies predict (pointwise mutual
    information over abstracts, in nats; 0 for a pair under the stored minimum): "speculative decoding" binds (2.6),
    "efficient vision" is two common words that happen to meet (-2.9)."""
    if count <= 0:
        return 0.0
    n = provenance().get("abstracts", 0)
    return math.log(count * n / max(1, term_count(a)) / max(1, term_count(b))) if n else 0.0


def provenance() -> dict:
    """Where the counts come from (source, abstracts read, slices left out, minimum count kept)."""
    return _tables()["provenance"]
