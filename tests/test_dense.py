"""The dense side at scale (assistant/store/dense.py): Chroma's HNSW candidates, re-scored exactly, give the
searches the exact matrix gives; real Chroma, real embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"


def _questions(n: int) -> list[str]:
    lines = (DATA / "blind_questions_3.jsonl").read_text().splitlines()
    return [q["question"] for q in map(json.loads, lines) if q.get("question")][:n]


def _ranking(found):
    """What a search gives, its scores to float32 rounding (the matrix product and Chroma's re-scoring sum in
    another order: 0.62872 against 0.62871 on one machine)."""
    return [(h.paper_id, pytest.approx(h.score, abs=1e-5), h.chunk_id, h.snippet) for h in found.hits], found.answerable


def test_hnsw_candidates_rescored_exactly_match_the_matrix(bundled_settings):
    from assistant.service.api import retriever
    from assistant.store.dense import HnswDense, MatrixDense, dense_side

    exact = retriever(bundled_settings.replace(dense="exact"))
    hnsw = retriever(bundled_settings.replace(dense="hnsw"))
    qvec = exact.embed_query("graph neural networks")
    assert isinstance(dense_side(exact, qvec), MatrixDense) and isinstance(dense_side(hnsw, qvec), HnswDense)
    for question in _questions(12):
        assert _ranking(hnsw.search(question, k=10)) == _ranking(exact.search(question, k=10)), question
    # chat's /filter: a where filter on the HNSW query, the same papers as the matrix's mask
    source = next(iter(exact.index.all_papers().values())).source
    assert exact.set_filter(f"source:{source}") == hnsw.set_filter(f"source:{source}")
    for question in _questions(4):
        a, b = exact.search(question, k=5), hnsw.search(question, k=5)
        assert _ranking(a) == _ranking(b) and all(h.source == source for h in b.hits)
    assert hnsw.index._vectors is None  # the HNSW side never loaded the matrix


def test_dense_setting_is_checked(monkeypatch):
    from assistant.config import Settings
    from assistant.errors import ConfigError

    monkeypatch.setenv("ASSISTANT_DENSE", "approximate")
    with pytest.raises(ConfigError, match="ASSISTANT_DENSE='approximate' is not valid"):
        Settings.from_env()
