"""Hybrid retrieval: dense chunks (Chroma) + BM25 papers (bm25s), fused per paper, then a relevance gate."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .config import Settings
from .index import Index, stem_tokenize


@dataclass
class Hit:
    """One retrieved paper: its best chunk is the snippet."""

    paper_id: str
    title: str
    score: float
    snippet: str
    dense: float = 0.0  # best chunk cosine similarity
    bm25: float = 0.0  # raw BM25 score of the paper
    rank: int = 0
    source: str = ""
    chunk_id: str = ""

    def as_dict(self) -> dict:
        return {"rank": self.rank, "paper_id": self.paper_id, "title": self.title, "score": round(self.score, 4),
                "snippet": self.snippet, "dense": round(self.dense, 4), "bm25": round(self.bm25, 4)}


@dataclass
class Retrieval:
    """Ranked hits for a query plus the gate's verdict."""

    query: str
    hits: list[Hit]
    answerable: bool
    confidence: float = 0.0
    query_vector: np.ndarray | None = field(default=None, repr=False)


def _minmax(values: dict[str, float]) -> dict[str, float]:
    if not values:
        return {}
    lo, hi = min(values.values()), max(values.values())
    if hi - lo < 1e-9:
        return {k: 1.0 for k in values}
    return {k: (v - lo) / (hi - lo) for k, v in values.items()}


class Retriever:
    """Searches an :class:`Index`. Stateless apart from the index it reads."""

    def __init__(self, index: Index, settings: Settings | None = None):
        self.index = index
        self.settings = settings or index.settings

    def embed_query(self, text: str) -> np.ndarray:
        from .embedder import embed_query

        return embed_query(self.index.embedder, text)

    def dense(self, qvec: np.ndarray, n_chunks: int) -> dict[str, tuple[float, str, str]]:
        """paper id -> (best chunk cosine, chunk text, chunk id) over the nearest chunks."""
        total = self.index.chunks.count()
        if total == 0:
            return {}
        res = self.index.chunks.query(query_embeddings=[qvec.tolist()], n_results=min(n_chunks, total),
                                      include=["distances", "metadatas", "documents"])
        best: dict[str, tuple[float, str, str]] = {}
        for cid, dist, meta, doc in zip(res["ids"][0], res["distances"][0], res["metadatas"][0], res["documents"][0]):
            sim = 1.0 - float(dist)
            pid = meta["paper_id"]
            if pid not in best or sim > best[pid][0]:
                best[pid] = (sim, doc, cid)
        return best

    def exact_dense(self, qvec: np.ndarray, paper_ids: list[str]) -> dict[str, tuple[float, str, str]]:
        """Exact best-chunk similarity for specific papers (those only BM25 found)."""
        if not paper_ids:
            return {}
        got = self.index.chunks.get(where={"paper_id": {"$in": paper_ids}},
                                    include=["embeddings", "metadatas", "documents"])
        best: dict[str, tuple[float, str, str]] = {}
        if not got["ids"]:
            return best
        sims = np.asarray(got["embeddings"], dtype=np.float32) @ qvec
        for cid, sim, meta, doc in zip(got["ids"], sims, got["metadatas"], got["documents"]):
            pid = meta["paper_id"]
            if pid not in best or sim > best[pid][0]:
                best[pid] = (float(sim), doc, cid)
        return best

    def bm25(self, query: str, n: int) -> dict[str, float]:
        retriever, ids = self.index.bm25()
        if retriever is None or not ids:
            return {}
        tokens = stem_tokenize([query])
        if not tokens.ids or not tokens.ids[0]:
            return {}
        docs, scores = retriever.retrieve(tokens, k=min(n, len(ids)), show_progress=False, n_threads=1)
        return {ids[int(d)]: float(s) for d, s in zip(docs[0], scores[0]) if s > 0}

    def search(self, query: str, k: int | None = None, candidates: int = 100) -> Retrieval:
        """Top-k papers for a query, fused from dense and BM25 rankings, with the gate's verdict."""
        k = k or self.settings.top_k
        qvec = self.embed_query(query)
        dense = self.dense(qvec, max(candidates, k * 4))
        bm25 = self.bm25(query, max(candidates, k * 2))
        missing = [pid for pid in bm25 if pid not in dense]
        dense.update(self.exact_dense(qvec, missing))
        w = self.settings.dense_weight
        d_norm = _minmax({pid: v[0] for pid, v in dense.items()})
        b_norm = _minmax(bm25) if bm25 else {}
        fused = {pid: w * d_norm.get(pid, 0.0) + (1 - w) * b_norm.get(pid, 0.0) for pid in dense}
        order = sorted(fused, key=lambda pid: -fused[pid])[:k]
        papers = self.index.all_papers()
        hits = []
        for rank, pid in enumerate(order, 1):
            sim, doc, cid = dense[pid]
            paper = papers.get(pid)
            hits.append(Hit(paper_id=pid, title=paper.title if paper else pid, score=fused[pid], snippet=doc,
                            dense=sim, bm25=bm25.get(pid, 0.0), rank=rank, source=paper.source if paper else "",
                            chunk_id=cid))
        confidence = max((h.dense for h in hits[:3]), default=0.0)
        answerable = bool(hits) and confidence >= self.threshold()
        return Retrieval(query=query, hits=hits, answerable=answerable, confidence=confidence, query_vector=qvec)

    # --- relevance gate ---------------------------------------------------------------------
    # The gate's confidence is the best chunk cosine among the top 3 fused hits: a paper must match
    # semantically and survive the lexical vote (the global dense maximum lets a single stray chunk
    # through on off-topic questions). Calibrated in benchmarks/gate.py against answerable,
    # unanswerable and out-of-domain questions.

    def threshold(self) -> float:
        if self.settings.min_relevance is not None:
            return self.settings.min_relevance
        return float((self.index.manifest or {}).get("gate_threshold", DEFAULT_GATE))


#: Dense-cosine threshold used when the index has no calibrated one (see benchmarks/gate.py).
DEFAULT_GATE = 0.41
