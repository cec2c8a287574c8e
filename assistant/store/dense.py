"""The dense side of a search: the exact chunk-vector matrix, or, at scale, Chroma's HNSW index.

Where the matrix fits it is the faster way (one matrix-vector product, no approximate-index misses). A
client of a Chroma server would otherwise download every chunk vector of the server into its own matrix,
and an embedded index past :data:`EMBEDDED_HNSW_ABOVE` chunks holds a matrix larger than the search needs.
There the candidates come from the chunk collection's HNSW ``query`` (a ``where`` filter for chat's
/filter), and only the candidates are scored exactly: a paper HNSW returned by the cosine of its nearest
chunk (HNSW computes the exact distance of every chunk it returns), a paper only BM25 proposed from its
chunks' vectors, read by id. What HNSW misses (a paper, or a paper's nearer chunk) is its recall, measured. HNSW parameters and the threshold come from
benchmarks/chroma_scale.py (docs/chroma-scale.md).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from assistant.text.corpus import Paper

if TYPE_CHECKING:  # numpy is imported where used: `papers` and `show` call only uses_hnsw here
    import numpy as np

#: An embedded index with more chunks than this searches through HNSW (ASSISTANT_DENSE=exact|hnsw overrides): at
#: 200k chunks the HNSW side took 6.5 ms (recall@10 0.982), the matrix 22.9 ms and 614 MB (docs/chroma-scale.md).
EMBEDDED_HNSW_ABOVE = 200_000
#: HNSW parameters of a new chunk collection (``max_neighbors``/M is fixed at creation).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 100
HNSW_EF_SEARCH = 800
#: Chunks asked of HNSW per candidate paper wanted: a paper's chunks are near each other, so the nearest
#: chunks repeat papers; 3 per paper gave the candidate papers of the matrix path (recall in the docs).
CHUNKS_PER_PAPER = 3
#: Chunk ids tried per paper when its chunks are re-scored (of the first 5,000 arxiv-ml abstracts 99.6% have fewer than 6 chunks of 128 tokens).
GUESS_CHUNKS = 6
#: Ids per ``where: {paper_id: {$in: [...]}}``: a filter of more papers is applied after the query instead.
MAX_IN = 2000


def hnsw_metadata() -> dict:
    """Collection metadata of a new chunk collection: cosine space and the measured HNSW parameters."""
    return {"hnsw:space": "cosine", "hnsw:M": HNSW_M, "hnsw:construction_ef": HNSW_EF_CONSTRUCTION,
            "hnsw:search_ef": HNSW_EF_SEARCH}


def uses_hnsw(index) -> bool:
    """Whether searches of this index take their dense candidates from HNSW (decided once per opened index)."""
    mode = index.settings.index.dense
    if mode in ("exact", "hnsw"):
        return mode == "hnsw"
    if index.remote:
        return True
    found = index.searches_hnsw
    if found is None:
        counted = getattr(index, "verified_counts", None)  # read by the open's check: no need to open Chroma
        found = index.searches_hnsw = (counted["chunks"] if counted else index.chunks.count()) > EMBEDDED_HNSW_ABOVE
    return found


def dense_side(retriever, qvec: np.ndarray) -> MatrixDense | HnswDense:
    return HnswDense(retriever, qvec) if uses_hnsw(retriever.index) else MatrixDense(retriever, qvec)


class MatrixDense:
    """Exact best-chunk cosine of every paper from the chunk-vector matrix (``Retriever.dense_all``)."""

    def __init__(self, retriever, qvec: np.ndarray):  # a retrieve.Retriever
        self.retriever = retriever
        self.ids, self.best, self.sims = retriever.dense_all(qvec)
        self.at = retriever.index.chunk_vectors().position

    def top(self, n: int) -> list[str]:
        import numpy as np

        return [self.ids[i] for i in top_indices(self.best, n) if np.isfinite(self.best[i])]

    def known(self, paper_id: str) -> bool:
        return paper_id in self.at

    def exact(self, paper_ids: list[str]) -> dict[str, float]:
        import numpy as np

        scores = {pid: float(self.best[self.at[pid]]) for pid in paper_ids if pid in self.at}
        return {pid: s for pid, s in scores.items() if np.isfinite(s)}

    def best_chunks(self, paper_ids: list[str]) -> dict[str, str]:
        return {pid: self.retriever.best_chunk(pid, self.sims) for pid in paper_ids}


class HnswDense:
    """Candidates from the chunk collection's HNSW index, re-scored exactly (see the module docstring)."""

    def __init__(self, retriever, qvec: np.ndarray):  # a retrieve.Retriever
        import numpy as np

        self.retriever = retriever
        self.qvec = np.asarray(qvec, dtype=np.float32)
        self.scores: dict[str, float] = {}
        self.chunk: dict[str, str] = {}

    def _call(self, fn):
        from assistant.store.records import retry_during_ingest

        index = self.retriever.index
        return retry_during_ingest(lambda: fn(index.chunks), index.reopen)

    def top(self, n: int) -> list[str]:
        """The papers of the nearest ``n * CHUNKS_PER_PAPER`` chunks (within the filter), nearest first; each
        scored by its nearest chunk's cosine, which the HNSW search computed exactly for the chunks it returns."""
        import numpy as np

        allowed = self.retriever.allowed
        where = {"paper_id": {"$in": sorted(allowed)}} if allowed is not None and len(allowed) <= MAX_IN else None
        want = max(1, n * CHUNKS_PER_PAPER * (1 if where or allowed is None else 4))
        # ids and distances only: a record's metadata carries its llama-index node (~2 KB), not needed here
        got = self._call(lambda c: c.query(query_embeddings=[self.qvec.tolist()], n_results=want, where=where,
                                           include=["distances"]))
        ids = [cid for cid in got["ids"][0] if allowed is None or paper_of(cid) in allowed]
        sims = 1.0 - np.asarray(got["distances"][0], dtype=np.float32)
        self._score(ids, sims[[i for i, cid in enumerate(got["ids"][0]) if allowed is None or paper_of(cid) in allowed]])
        return list(dict.fromkeys(map(paper_of, ids)))[:n]

    def known(self, paper_id: str) -> bool:
        return True  # a paper without chunks drops out in exact()

    def exact(self, paper_ids: list[str]) -> dict[str, float]:
        """Best chunk cosine of each paper: from :meth:`top`'s distances for the papers HNSW returned, from
        their vectors for the others (BM25's candidates), read by primary key: a chunk's id is
        ``<paper id>::<n>``, n from 1, so :data:`GUESS_CHUNKS` ids per paper are asked for, and a paper
        with that many has the rest listed with a ``where``. (A query restricted to ids or to a ``where``
        on the papers lets the server compute the cosines, but costs time in proportion to the collection:
        696 ms for 624 chunks of a 200k-chunk collection, where reading their ids took 8 ms.)"""
        todo = [pid for pid in dict.fromkeys(paper_ids) if pid not in self.scores]
        step = MAX_IN // GUESS_CHUNKS
        for at in range(0, len(todo), step):
            part = todo[at:at + step]
            guess = [f"{pid}::{n}" for pid in part for n in range(1, GUESS_CHUNKS + 1)]
            got = self._call(lambda c: c.get(ids=guess, include=["embeddings"]))
            self._read(got)
            more = [pid for pid in part if f"{pid}::{GUESS_CHUNKS}" in set(got["ids"])]
            if more:  # a long abstract: read its other chunks too
                rest = [cid for cid in self._call(lambda c: c.get(where={"paper_id": {"$in": more}}, include=[]))["ids"]
                        if cid not in set(got["ids"])]
                if rest:
                    self._read(self._call(lambda c: c.get(ids=rest, include=["embeddings"])))
        return {pid: self.scores[pid] for pid in paper_ids if pid in self.scores}

    #: Chunk vectors read to score papers HNSW did not return.
    vectors_read = 0

    def _read(self, got: dict) -> None:
        import numpy as np

        if got["ids"]:
            self.vectors_read += len(got["ids"])
            self._score(got["ids"], np.asarray(got["embeddings"], dtype=np.float32) @ self.qvec)

    def _score(self, chunk_ids: list[str], sims: np.ndarray) -> None:
        import numpy as np

        for cid, sim in zip(chunk_ids, sims):
            pid = paper_of(cid)
            if sim > self.scores.get(pid, -np.inf):
                self.scores[pid], self.chunk[pid] = float(sim), cid

    def best_chunks(self, paper_ids: list[str]) -> dict[str, str]:
        """Each paper's best chunk; the papers are read in one request, as the hits will need them."""
        papers = self.retriever.index.all_papers()
        if isinstance(papers, PaperShelf):
            papers.prefetch(paper_ids)
        return {pid: self.chunk[pid] for pid in paper_ids}


def paper_of(chunk_id: str) -> str:
    """The paper of a chunk, from its id (``<paper id>::<n>``, index.chunk_papers), not from its metadata."""
    return chunk_id.rsplit("::", 1)[0]


class PaperShelf(Mapping):
    """The papers of an index searched through HNSW, read from the papers collection as they are asked
    for (the last :data:`SHELF_SIZE` kept) rather than all held: at scale a client holds the BM25 index,
    not the corpus. Iterating pages through the collection, in the order Chroma returns records."""

    def __init__(self, index):  # an index.Index
        self.index = index
        self._kept: OrderedDict[str, Paper] = OrderedDict()

    def _keep(self, paper: Paper) -> None:
        self._kept[paper.id] = paper
        self._kept.move_to_end(paper.id)
        while len(self._kept) > SHELF_SIZE:
            self._kept.popitem(last=False)

    def prefetch(self, paper_ids: list[str]) -> None:
        """Read the papers not kept yet in one request."""
        from assistant.store.records import meta_to_paper
        from assistant.store.records import retry_during_ingest

        todo = [pid for pid in dict.fromkeys(paper_ids) if pid not in self._kept]
        if todo:
            index = self.index
            got = retry_during_ingest(lambda: index.papers.get(ids=todo, include=["metadatas", "documents"]),
                                       index.reopen)
            for meta, doc in zip(got["metadatas"], got["documents"]):
                self._keep(meta_to_paper(meta, doc))

    def __getitem__(self, paper_id: str) -> Paper:
        if paper_id not in self._kept:
            self.prefetch([paper_id])
        if paper_id not in self._kept:
            raise KeyError(paper_id)
        self._kept.move_to_end(paper_id)
        return self._kept[paper_id]

    def __contains__(self, paper_id: object) -> bool:
        return isinstance(paper_id, str) and self.get(paper_id) is not None

    def __iter__(self) -> Iterator[str]:
        from assistant.store.records import paged

        return (pid for pid, in paged(self.index.papers, []))

    def __len__(self) -> int:
        return self.index.papers.count()

    def values(self) -> Iterator[Paper]:  # type: ignore[override]
        from assistant.store.records import meta_to_paper, paged

        return (meta_to_paper(m, d) for _, m, d in paged(self.index.papers, ["metadatas", "documents"]))

    def items(self) -> Iterator[tuple[str, Paper]]:  # type: ignore[override]
        return ((p.id, p) for p in self.values())


#: Papers a :class:`PaperShelf` keeps (a chat session reads the same few papers again and again).
SHELF_SIZE = 2048


def top_indices(scores: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n largest scores, best first (a partial sort: the index can hold 100k papers)."""
    import numpy as np

    if n >= len(scores):
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, n)[:n]
    return part[np.argsort(-scores[part], kind="stable")]
