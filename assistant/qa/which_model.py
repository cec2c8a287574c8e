"""The fitted `which` model: P(a paper meets a criterion) from how the criterion, read by the question encoder
(:mod:`assistant.embed.query_encoder`), scores the paper against the whole corpus.

It reads eleven signals of :class:`assistant.qa.synthesis.WhichReading` (:data:`FEATURES`) and was fitted by
``training/fit_which.py --encoder`` on criteria labelled by reading every paper of a corpus (the arXiv training
slices' criteria the shipped encoder never trained on, and benchmarks/data/which_labels.jsonl over the bundled
corpus), its threshold the one with the best F1 of the lists `which` makes with it. ``assistant/data/which.json``
holds it with its provenance; docs/decisions.md gives its figures.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from assistant.search.decide import Logistic

MODEL_FILE = Path(__file__).resolve().parents[1] / "data" / "which.json"

#: What the model reads of each paper: its cosine, as a share of the best paper's and as a robust z-score against the
#: corpus; the fused score as a share of the best and as a z-score; BM25 as a share of the best; the log of its fused
#: rank; whether its contribution sentence is the kind of paper asked for (and whether any is); the best cosine of
#: the corpus; the answerable model unsure.
FEATURES = ("dense", "dense_rel", "z_dense", "ratio", "z_fused", "lex", "log_rank", "kind", "top", "unsure",
            "is_kind")


def robust_z(x: np.ndarray) -> np.ndarray:
    """(x - median) / (1.4826 x median absolute deviation): a z-score the few papers that meet a criterion do not
    move."""
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med))) * 1.4826 or 1e-6
    return (x - med) / mad


def features(reading) -> np.ndarray:
    """One row of :data:`FEATURES` per paper of a :class:`assistant.qa.synthesis.WhichReading`."""
    dense, fused, ids = reading.dense, reading.fused, reading.ids
    top = max(float(dense.max()), 1e-9)
    rank = np.empty(len(ids))
    rank[np.argsort(-fused)] = np.arange(len(ids))
    ones = np.ones(len(ids))
    return np.column_stack([dense, dense / top, robust_z(dense), fused / max(float(fused.max()), 1e-9),
                            robust_z(fused), reading.lexical / max(float(reading.lexical.max()), 1e-9),
                            np.log1p(rank), [float(p in reading.kind) for p in ids], top * ones,
                            float(reading.unsure) * ones, float(bool(reading.kind)) * ones])


@functools.lru_cache(maxsize=1)
def model() -> "Logistic | None":
    """The shipped model (:class:`assistant.search.decide.Logistic`), or None when the package has no which.json
    or no question encoder to read criteria with."""
    from assistant.embed import query_encoder
    from assistant.search.decide import Logistic

    if not MODEL_FILE.exists() or not query_encoder.available():
        return None
    return Logistic.from_dict(json.loads(MODEL_FILE.read_text(encoding="utf-8"))["model"])


def meets(reading, fitted: "Logistic") -> np.ndarray:
    """Which papers of a topical reading the model lists (a bool per paper)."""
    return fitted.probability(features(reading)) >= fitted.threshold
