"""Hybrid retrieval: exact dense (chunk-vector matrix) + BM25 (bm25s), fused per paper, then a relevance gate."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from assistant.config import Settings
from assistant.search.names import named_papers
from assistant.store.dense import dense_side, top_indices
from assistant.store.index import Index
from assistant.text.corpus import Paper
from assistant.text.terms import stem_terms
from assistant.text.english import FRAMING_WORDS

#: Query vectors a retriever keeps (a long question and its missing-word variants are ~60 texts; each 1.5 KB).
VECTORS_KEPT = 512


@dataclass(frozen=True)
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
    #: the re-ranking model's mean log-probability of the question after this paper (ASSISTANT_RERANK), if it ran
    likelihood: float | None = None

    def as_dict(self) -> dict:
        return {"rank": self.rank, "paper_id": self.paper_id, "title": self.title, "score": round(self.score, 4),
                "snippet": self.snippet, "dense": round(self.dense, 4), "bm25": round(self.bm25, 4)} \
            | ({"likelihood": round(self.likelihood, 4)} if self.likelihood is not None else {})


@dataclass(frozen=True)
class Retrieval:
    """Ranked hits for a query plus the gate's verdict. Immutable: a later stage makes a new one
    (:func:`dataclasses.replace`)."""

    query: str
    hits: list[Hit]
    answerable: bool
    confidence: float = 0.0
    query_vector: np.ndarray | None = field(default=None, repr=False)
    #: the query as typed, when a typo in it was mended (``query`` is then the mended text)
    typed: str | None = None
    #: what the question wants, as decided (answer.retrieve): "paper" (one paper) or "area" (several)
    intent: str = "paper"
    #: each hit's calibrated probability of being relevant (answer.retrieve), by paper id
    relevance: dict[str, float] = field(default_factory=dict)
    #: papers the question names by a name only they have
    named: list[str] = field(default_factory=list)
    #: the answerable model's probability, when it was asked
    probability: float | None = None
    #: what ordered the hits (the score shown is always the fused one): "fused" (the fused score), "reranked" (the
    #: re-ranking model's likelihood), "named" (the papers the query names first), "area" (an area's ranking)
    order: str = "fused"
    #: a question the corpus holds only in parts (answer.retrieve, :mod:`.parts`): each part and its papers
    parts: tuple = ()


def fuse(dense: dict[str, float], bm25: dict[str, float], dense_weight: float,
         bm25_ceiling: float | None = None) -> dict[str, float]:
    """Blend per-paper scores: ``w * cosine + (1 - w) * BM25 / ceiling``.

    ``bm25_ceiling`` is the most BM25 any paper could score on the query (the sum over its terms of
    the best score each term gives any paper), so the lexical side says how much of the query's
    vocabulary a paper matches, not how it ranks. A paraphrase whose words no paper shares gets a
    small lexical side and the dense side decides; dividing by the best BM25 score instead gave the
    best weak lexical match a full vote, which at 20k papers outvoted the gold paper's cosine.
    Without a ceiling, BM25 is divided by its best score. Papers missing from ``bm25`` count as
    BM25 0; every paper must have a dense score.
    """
    scale = bm25_ceiling if bm25_ceiling and bm25_ceiling > 0 else max(bm25.values(), default=0.0) or 1.0
    return {pid: dense_weight * d + (1 - dense_weight) * bm25.get(pid, 0.0) / scale for pid, d in dense.items()}


class Retriever:
    """Searches an :class:`Index`. Stateless apart from the index it reads."""

    def __init__(self, index: Index, settings: Settings | None = None):
        self.index = index
        self.settings = settings or index.settings
        #: When set, only these papers can be retrieved (chat's /filter).
        self.allowed: set[str] | None = None
        self._mended: dict[tuple, str] = {}
        self._probes: dict[tuple, Retrieval] = {}  # mend's search of a query it left as it was
        self._vectors: dict[str, np.ndarray] = {}
        #: Called (done, total) as papers are re-ranked (ASSISTANT_RERANK): the CLI shows a progress bar.
        self.on_rerank: Callable[[int, int], None] | None = None

    def set_filter(self, spec: str | None) -> int:
        """Restrict retrieval to a source file (``source:NAME``) or to papers containing a keyword.

        ``None``/``off`` clears it. Returns how many papers remain retrievable."""
        from assistant.errors import InputError

        papers = self.index.all_papers()
        if not spec or spec.strip().lower() in {"off", "none", "clear"}:
            self.allowed = None
            return len(papers)
        spec = spec.strip()
        if spec.lower().startswith("source:"):
            name = spec.split(":", 1)[1].strip()
            allowed = {p.id for p in papers.values() if p.source == name or p.source.rsplit(".", 1)[0] == name}
        else:
            key = spec.lower()
            allowed = {p.id for p in papers.values() if key in p.title.lower() or key in p.abstract.lower()}
        if not allowed:
            raise InputError(f"no paper matches the filter {spec!r}; sources are: "
                             + ", ".join(sorted({p.source for p in papers.values()})[:10]))
        self.allowed = allowed
        return len(allowed)

    def within(self, paper_ids) -> Retriever:
        """This retriever restricted to ``paper_ids`` for one call (chat's "which of them", "compare [1] and
        [3]"): a view sharing the index and its caches, so nothing is set on this one and restored."""
        view = copy.copy(self)
        view.allowed = set(paper_ids)
        return view

    # --- what the stages above read of the index, so they need not reach through to it ------------------

    def papers(self) -> dict[str, Paper]:
        """Every paper of the index, in source order."""
        return self.index.all_papers()

    def paper(self, ref: str) -> Paper:
        """One paper by id, a name only it has or a part of one title (InputError when none, or several, match)."""
        from assistant.search.names import resolve_paper

        self.follow()
        return self.index.get_paper(resolve_paper(self.index, ref))

    def count(self) -> int:
        return self.index.count()

    def term_weights(self) -> dict[str, float]:
        return self.index.term_weights()

    def doc_freq(self, term: str) -> int:
        return self.index.doc_freq(term)

    def bm25_positions(self) -> dict[str, int]:
        return self.index.bm25_positions()

    def sentence_vectors(self, paper_id: str, abstract: str):
        """(sentences, their vectors) of one abstract (cached)."""
        return self.index.sentence_vectors(paper_id, abstract)

    def paper_vectors(self, paper_ids: list[str]) -> dict[str, np.ndarray]:
        """Each paper's vector (the mean of its chunk vectors)."""
        got = self.index.papers.get(ids=list(paper_ids), include=["embeddings"])
        return {i: np.asarray(e, dtype=np.float32) for i, e in zip(got["ids"], got["embeddings"])}

    @property
    def embedder(self):
        return self.index.embedder

    def named(self, question: str) -> list[str]:
        """Ids of the papers the question names (names.named_papers)."""
        self.follow()
        return named_papers(self.index, question)

    def follow(self) -> None:
        """Take up another client's commit to a shared Chroma server (Index.follow) and forget the searches
        made before it."""
        if self.index.follow():
            self._mended.clear()
            self._probes.clear()

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector (the last few hundred are kept: deciding and searching embed the same question)."""
        return self.embed_queries([text])[0]

    def asked_vector(self, text: str) -> np.ndarray:
        """What the question asks for, as a vector comparable with the chunk vectors: the question reader's
        encoder's (:mod:`assistant.embed.query_encoder`) for an index the local MiniLM built, the query's own vector
        for any other embedder (the encoder reads only MiniLM's space). Kept, as the query vectors are."""
        key = "\0asked\0" + text
        if key not in self._vectors:
            from assistant.embed import query_encoder
            from assistant.embed.embedder import MINILM_ID

            if self.index.embedder_id != MINILM_ID or not query_encoder.available():
                return self.embed_query(text)
            self._vectors[key] = query_encoder.encode(text)
            while len(self._vectors) > VECTORS_KEPT:
                self._vectors.pop(next(iter(self._vectors)))
        return self._vectors[key]

    def embed_queries(self, texts: list[str]) -> list[np.ndarray]:
        """Several queries' vectors, those not kept embedded in one batch (the missing-word model reads a question
        without each of its words: one pass, not one per word)."""
        from assistant.embed.embedder import embed_array, embed_query

        found = {t: self._vectors[t] for t in texts if t in self._vectors}
        todo = [t for t in dict.fromkeys(texts) if t not in found]
        if len(todo) == 1:  # one text: the embedder's cheapest path for a one-shot question
            found[todo[0]] = embed_query(self.index.embedder, todo[0])
        elif todo:
            found.update(zip(todo, embed_array(self.index.embedder, todo)))
        for t in texts:  # kept, most recent last; the oldest dropped past VECTORS_KEPT
            self._vectors[t] = self._vectors.pop(t, found[t])
        while len(self._vectors) > VECTORS_KEPT:
            self._vectors.pop(next(iter(self._vectors)))
        return [found[t] for t in texts]

    def dense_all(self, qvec: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Exact best-chunk cosine of every paper: (paper ids, best similarity, every chunk's similarity).

        Papers outside the filter score -inf."""
        vectors = self.index.chunk_vectors()
        if not vectors.chunk_ids:
            return [], np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)
        from assistant.embed.embedder import one_blas_thread

        with one_blas_thread():  # a memory-bound matrix-vector product
            sims = vectors.matrix @ np.asarray(qvec, dtype=np.float32)
        best = np.maximum.reduceat(sims, vectors.starts)
        if self.allowed is not None:
            best = np.where([pid in self.allowed for pid in vectors.paper_ids], best, -np.inf)
        return vectors.paper_ids, best, sims

    def best_chunk(self, paper_id: str, sims: np.ndarray) -> str:
        """Id of a paper's most similar chunk, given every chunk's similarity from :meth:`dense_all`."""
        vectors = self.index.chunk_vectors()
        rows = vectors.rows(vectors.position[paper_id])
        return vectors.chunk_ids[rows.start + int(np.argmax(sims[rows.start:rows.stop]))]

    def bm25_all(self, query: str) -> np.ndarray | None:
        """BM25 score of every paper (aligned with the index's BM25 id list), or None."""
        retriever, ids = self.index.bm25()
        terms = stem_terms(query) if retriever is not None and ids else []
        return np.asarray(retriever.get_scores(terms), dtype=np.float32) if terms else None

    def bm25_ceiling(self, query: str) -> float:
        """The highest BM25 score any paper could get for the query: each query term at the best
        score it gives any paper (see :func:`fuse`)."""
        retriever, _ = self.index.bm25()
        if retriever is None:
            return 0.0
        ceilings = self.index.term_ceilings()
        ids = [retriever.vocab_dict.get(term) for term in stem_terms(query)]
        return float(sum(ceilings[t] for t in ids if t is not None and t < len(ceilings)))

    def bm25(self, query: str, n: int) -> dict[str, float]:
        """The top-n papers by BM25 (within the filter, if any) with their scores."""
        return self._bm25top_indices(self.bm25_all(query), n)

    def _bm25top_indices(self, scores: np.ndarray | None, n: int) -> dict[str, float]:
        if scores is None:
            return {}
        ids = self.index.bm25()[1]
        if self.allowed is not None:
            scores = scores * np.array([pid in self.allowed for pid in ids], dtype=np.float32)
        return {ids[int(i)]: float(scores[i]) for i in top_indices(scores, n) if scores[i] > 0}

    def search(self, query: str, k: int | None = None, candidates: int = 100, rerank: bool = False) -> Retrieval:
        """Top-k papers for a query, fused from dense and BM25 rankings, with the gate's verdict.

        The candidate pool is the dense top list plus the BM25 top list; every
        candidate gets its exact score on both sides, and :func:`fuse` blends the cosine with
        the BM25 share of the query's ceiling using ``dense_weight`` (benchmarks/retrieval.py
        measured this above max- and min-max-normalised blends and reciprocal-rank fusion).

        A word that no paper and no English word list has, one letter away (two letters swapped, one
        left out or one too many) from exactly one word of the papers found, is taken as a typo of it
        and the search is run again with it mended ("TpooFormer" -> "TopoFormer", "dataest
        distillaiton" -> "dataset distillation"): typos pulled cosines under the gate.

        ``rerank``: this search's order is what the user reads (not a probe or a wider pool), so with
        ASSISTANT_RERANK a close call past the gate is re-ranked (see :meth:`_rerank`)."""
        self.follow()
        mended = self.mend(query)
        probe = self._probes.get(self._key(query))
        k = k or self.settings.search.top_k
        rerank = rerank and self.settings.search.rerank != "off"
        # the probe is this search unless it is a close call to re-rank (its top two are the fused top two)
        close = rerank and probe is not None and len(probe.hits) > 1 and \
            probe.hits[0].score - probe.hits[1].score < self.settings.search.rerank_margin
        if mended == query and probe is not None and candidates == 100 and k <= len(probe.hits) and not close:
            # nothing mended: mend's search of this query, 10 deep from the same pool, is this search
            return replace(probe, hits=probe.hits[:k])
        found = self._search(mended, k, candidates, rerank)
        return replace(found, typed=query) if mended != query else found

    def _key(self, query: str) -> tuple:
        return query, None if self.allowed is None else frozenset(self.allowed)  # hits depend on the filter

    def mend(self, query: str) -> str:
        """The query with its typos mended (see :meth:`search`); itself when it has none. A query with a
        word nothing knows costs one more search, to see which papers it is about (cached per query)."""
        from assistant.embed.embedder import vocabulary_words

        key = self._key(query)
        if key in self._mended:
            return self._mended[key]
        longest = self.settings.tuning.mend_max_letters
        unknown = [m for m in _PART.finditer(query) if 4 <= len(m.group()) <= longest and m.group().isalpha()
                   and m.group().lower() not in vocabulary_words()
                   and not any(self.index.doc_freq(t) for t in stem_terms(m.group()))]
        mended = query
        if unknown:
            probe = self._search(query, 10, 100)
            mended = self._mend_with(query, unknown, probe.hits)
            if mended == query:  # kept for search() of the same query
                self._probes[key] = probe
        if len(self._mended) > 256:  # bounded: a chat session asks a few hundred questions at most
            self._mended.clear()
            self._probes.clear()
        self._mended[key] = mended
        self._mended[(mended, key[1])] = mended  # read again (ask mends, then searches the mended text)
        return mended

    def _mend_with(self, query: str, unknown: list[re.Match], hits: list[Hit]) -> str:
        """Each unknown word one slip from exactly one word of these papers (or of an area question's
        framing: "Which paeprs ...") replaced by that word."""
        if not hits:
            return query
        papers = self.index.all_papers()
        spelling: dict[str, set[str]] = {w: {w} for w in FRAMING_WORDS}
        for h in hits:
            p = papers.get(h.paper_id)
            for w in _PART.findall(f"{p.title} {p.abstract}" if p else f"{h.title} {h.snippet}"):
                spelling.setdefault(w.lower(), set()).add(w)
        out, last = [], 0
        for m in unknown:
            near = {w for c in _one_slip(m.group().lower()) for w in spelling.get(c, ())}
            if len({w.lower() for w in near}) == 1:  # one word it can be, however the papers case it
                word = sorted(near)[0]
                fixed = word.lower() if m.group().islower() and not _name_like(word) else word
                out += [query[last:m.start()], fixed]
                last = m.end()
        return "".join(out + [query[last:]]) if out else query

    def _search(self, query: str, k: int | None, candidates: int, rerank: bool = False) -> Retrieval:
        k = k or self.settings.search.top_k
        qvec = self.embed_query(query)
        side = dense_side(self, qvec)  # the exact matrix, or at scale Chroma's HNSW + exact re-scoring (dense.py)
        pool = dict.fromkeys(side.top(max(candidates, k * 4)))
        all_bm25 = self.bm25_all(query)
        bm25 = self._bm25top_indices(all_bm25, max(candidates, k * 2))
        pool.update((pid, None) for pid in bm25 if side.known(pid))
        if all_bm25 is not None:
            pos = self.index.bm25_positions()
            for pid in pool:  # exact BM25 for the dense candidates too
                if pid in pos:
                    bm25.setdefault(pid, float(all_bm25[pos[pid]]))
        dense = side.exact(list(pool))
        fused = fuse(dense, bm25, self.settings.search.dense_weight, self.bm25_ceiling(query))
        order = self._phrases_first(query, sorted(fused, key=lambda pid: -fused[pid]))
        # the gate reads the fused ranking's top cosines, so re-ranking never changes what is answerable
        confidence = max((dense[pid] for pid in order[:min(3, k)]), default=0.0)
        papers = self.index.all_papers()
        likely: dict[str, float] = {}
        if rerank and confidence >= self.threshold():  # a refused search's order is never read
            order, likely = self._rerank(query, order, fused, papers, side)
        order = order[:k]
        best_chunk = side.best_chunks(order)
        texts = self.index.chunk_texts(list(best_chunk.values()))
        hits = []
        for rank, pid in enumerate(order, 1):
            paper = papers.get(pid)
            cid = best_chunk[pid]
            hits.append(Hit(paper_id=pid, title=paper.display_title if paper else pid, score=fused[pid],
                            snippet=texts.get(cid, ""), dense=dense[pid], bm25=bm25.get(pid, 0.0), rank=rank,
                            source=paper.source if paper else "", chunk_id=cid, likelihood=likely.get(pid)))
        # the search's own verdict (a floor on the cosine, or a paper the query names); `ask` decides with the
        # fitted model (answer.retrieve)
        answerable = bool(hits) and (confidence >= self.threshold() or hits[0].paper_id in named_papers(self.index,
                                                                                                       query))
        return Retrieval(query=query, hits=hits, answerable=answerable, confidence=confidence, query_vector=qvec)

    def _rerank(self, query: str, order: list[str], fused: dict[str, float], papers: dict,
                side) -> tuple[list[str], dict[str, float]]:
        """With ASSISTANT_RERANK, in an index of at least ``rerank_min_papers`` papers, when the top two fused
        scores are a close call, the top ``rerank_depth`` papers re-ordered by fused score + tuning.rerank_weight x the
        question's likelihood after each one's title and abstract (see rerank.py); returns the order and those
        likelihoods. Under 1,000 papers it bought 2 of 611 questions a better top 5 for ~8 s CPU each
        (docs/speed.md)."""
        if len(order) < 2 or fused[order[0]] - fused[order[1]] >= self.settings.search.rerank_margin \
                or len(papers) < self.settings.search.rerank_min_papers:
            return order, {}
        from assistant.search.rerank import reranker

        top = [pid for pid in order[: self.settings.search.rerank_depth] if pid in papers]
        if self.rerank_passage == "abstract":
            texts = {pid: papers[pid].abstract for pid in top}
        else:
            best = side.best_chunks(top)
            found = self.index.chunk_texts(list(best.values()))
            texts = {pid: found.get(best[pid]) or papers[pid].abstract for pid in top}
        passages = {pid: f"{papers[pid].title}. {texts[pid]}" if papers[pid].title else texts[pid] for pid in top}
        likely = reranker(self.settings.search.rerank).scores(query, passages, self.on_rerank)
        weight = self.settings.tuning.rerank_weight
        blend = {pid: fused[pid] + weight * likely[pid] for pid in likely}
        return sorted(blend, key=lambda pid: -blend[pid]) + [pid for pid in order if pid not in blend], likely

    #: What the re-ranking model reads of each paper after its title: "abstract", or "chunk" (its best chunk: ~40%
    #: less CPU per paper, but on the bundled corpus it lifted the look-alike question's paper from 7th to 3rd
    #: where the abstract lifts it to 1st; not measured among the distractors yet: benchmarks/cost.py --variants).
    rerank_passage = "abstract"

    def _phrases_first(self, query: str, order: list[str]) -> list[str]:
        """The order with the papers that hold every phrase the query quotes ("can any VLM 'think with images'?")
        first, as a search engine reads quotes; the rest as they were."""
        phrases = [_plain(p) for p in _QUOTED.findall(query) if len(p.split()) >= 2 or "-" in p]
        if not phrases:
            return order
        papers = self.index.all_papers()
        if hasattr(papers, "prefetch"):  # at scale papers are read as asked (dense.PaperShelf): in one request
            papers.prefetch(order)
        holds = [pid for pid in order if pid in papers
                 and all(p in _plain(f"{papers[pid].title} {papers[pid].abstract}") for p in phrases)]
        first = set(holds)
        return holds + [pid for pid in order if pid not in first] if holds else order

    def threshold(self) -> float:
        """The relevance gate: ASSISTANT_MIN_RELEVANCE, else the hand-set tuning.relevance_gate."""
        search = self.settings.search
        return search.min_relevance if search.min_relevance is not None else self.settings.tuning.relevance_gate


_PART = re.compile(r"[A-Za-z][A-Za-z0-9]*")  # a word, or one part of a hyphenated one


def _one_slip(word: str) -> set[str]:
    """Words one typing slip from this one: two neighbouring letters swapped, one left out, one too many.
    (Not one letter changed: "tabular" -> "tubular", "splatting" -> "splitting" change the topic.)"""
    letters = "abcdefghijklmnopqrstuvwxyz"
    cuts = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return ({a + b[1] + b[0] + b[2:] for a, b in cuts if len(b) > 1} | {a + b[1:] for a, b in cuts if b}
            | {a + c + b for a, b in cuts for c in letters}) - {word}


#: A phrase in quotes: 'think with images', "LLM-as-a-judge", ``think with images''.
_QUOTED = re.compile(r"(?:^|(?<=[\s(]))(?:[\"“‘']|``)([^\"”’'`\n]{3,80}?)(?:[\"”’']|'')(?=[\s?.,!;:)]|$)")


def _plain(text: str) -> str:
    """Lower case, LaTeX and quote marks gone, one space: what a quoted phrase is matched against."""
    from assistant.text.latex import readable

    return " ".join(re.sub(r"[^\w\s-]", " ", readable(text).lower()).split())


def _acronym(word: str) -> bool:
    """All capitals, or their plural: "RNN", "LMs"."""
    return word.isupper() or len(word) > 2 and word.endswith("s") and word[:-1].isupper()


def _name_like(word: str) -> bool:
    """Written like a name: a capital after the first letter ("LongFilter") or all capitals ("CLASH")."""
    return word.isupper() and len(word) >= 3 or any(c.isupper() for c in word[1:])

