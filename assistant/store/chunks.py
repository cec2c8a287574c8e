"""Papers and chunks as the store holds them: chunking, Chroma metadata, the texts embedded and indexed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

from assistant.config import Settings
from assistant.text.corpus import Paper


# Records hold no Chroma "document": Chroma full-text indexes every document it stores (trigrams in
# SQLite), which nothing here queries (BM25 is bm25s) and which made the writes 2-3x as slow. A paper's
# abstract is in its metadata; a chunk's record points into it (README "Ingest throughput").


@dataclass(frozen=True)
class Chunk:
    """A piece of one paper's text, embedded on its own."""

    id: str
    paper_id: str
    number: int
    text: str
    start: int = -1  # offset of ``text`` in the paper's abstract (-1: not a slice of it)


def paper_to_meta(paper: Paper) -> dict:
    data = {
        "id": paper.id, "title": paper.title, "source": paper.source, "position": paper.position,
        "authors": list(paper.authors), "url": paper.url, "date": paper.date, "keywords": list(paper.keywords),
        "urls": list(paper.urls), "title_derived": paper.title_derived, "extra": paper.extra, "origin": paper.origin,
    }
    meta = {"paper_id": paper.id, "title": paper.title, "source": paper.source, "position": paper.position,
            "content_hash": paper.content_hash, "abstract": paper.abstract,
            "paper_json": json.dumps(data, ensure_ascii=False, default=str)}
    if paper.origin:  # the file it came from: a re-ingest of that file replaces what it held (text/ids.py)
        meta["origin"] = paper.origin
    return meta


def paper_dict(paper: Paper) -> dict:
    return {"id": paper.id, "title": paper.title, "abstract": paper.abstract, "source": paper.source,
            "position": paper.position, "authors": list(paper.authors), "url": paper.url, "date": paper.date,
            "keywords": list(paper.keywords), "urls": list(paper.urls), "title_derived": paper.title_derived,
            "extra": paper.extra, "origin": paper.origin}


def paper_from_dict(d: dict) -> Paper:
    return Paper(id=d["id"], title=d["title"], abstract=d["abstract"], source=d["source"], position=d["position"],
                 authors=tuple(d["authors"]), url=d["url"], date=d["date"], keywords=tuple(d["keywords"]),
                 urls=tuple(d["urls"]), title_derived=d["title_derived"], extra=d["extra"], origin=d.get("origin"))


def chunk_to_meta(chunk: Chunk, paper: Paper | None = None) -> dict:
    """A chunk's record: its paper, number and offsets into the abstract (its text, if not a slice of it),
    and the chunk as a llama-index node (:func:`node_content`)."""
    meta = {"paper_id": chunk.paper_id, "chunk": chunk.number}
    if chunk.start >= 0:
        meta.update(start=chunk.start, end=chunk.start + len(chunk.text))
    else:
        meta["text"] = chunk.text
    return meta | node_content(chunk, paper)


#: Marks the chunk records that carry their llama-index node (see :func:`node_content`).
NODE_CONTENT = "_node_content"


def node_content(chunk: Chunk, paper: Paper | None = None) -> dict:
    """The metadata keys llama-index's ChromaVectorStore rebuilds a node from: ``_node_content`` (a
    TextNode's JSON, with the chunk's text) and ``_node_type``. The text goes here rather than in the
    record's document: Chroma full-text indexes documents (see above), not metadata, and llama-index
    reads a node's text from ``_node_content`` when the document is empty. Written by hand so that an
    ingest need not import llama-index (~2 s); tests/test_llama_index.py reads it back through llama-index."""
    meta = {"paper_id": chunk.paper_id, "chunk": chunk.number}
    if paper is not None:
        meta.update(title=paper.title, source=paper.source)
    node = {"id_": chunk.id, "text": chunk.text, "metadata": meta,
            "relationships": {"1": {"node_id": chunk.paper_id, "node_type": "4", "metadata": {},
                                    "class_name": "RelatedNodeInfo"}},  # SOURCE: the paper as a document
            "class_name": "TextNode"}
    if chunk.start >= 0:
        node.update(start_char_idx=chunk.start, end_char_idx=chunk.start + len(chunk.text))
    return {NODE_CONTENT: json.dumps(node, ensure_ascii=False), "_node_type": "TextNode"}


def bm25_text(paper: Paper) -> str:
    """Title (weighted x2: a title is a dense summary of the paper) + abstract.

    A derived title repeats the abstract's own words, so it is not indexed at all."""
    return paper.abstract if paper.title_derived else f"{paper.title}\n{paper.title}\n{paper.abstract}"


def embed_text(paper: Paper, chunk: Chunk, title_on: str = "all") -> str:
    """The text embedded for a chunk: a real title goes before every chunk (``title_on="all"``, the
    default: a chunk out of context still says what the paper is about) or before the first only."""
    if paper.title_derived or (title_on == "first" and chunk.number > 1):
        return chunk.text
    return f"{paper.title}. {chunk.text}"


def chunk_papers(papers: Iterable[Paper], settings: Settings) -> list[Chunk]:
    """Split each abstract into sentence-aligned chunks measured in the embedder's own tokens."""
    from assistant.text.chunking import SentencePacker, split_sentences
    from assistant.embed.embedder import count_tokens, count_tokens_batch

    papers = list(papers)
    # The packer splits each abstract into sentences and counts the abstract and each sentence: split
    # once, and count them all in one parallel batch (0.4x the time of one call per text); anything
    # else it asks about is split or counted on demand.
    sentences = {p.abstract: split_sentences(p.abstract) for p in papers}
    texts = [t for abstract, parts in sentences.items() for t in (abstract, *parts)]
    known = dict(zip(texts, count_tokens_batch(texts)))

    def count(text: str) -> int:
        n = known.get(text)
        return len(count_tokens(text)) if n is None else n

    # the chunks llama-index's SentenceSplitter makes, without its ~7 s of imports (see chunking.py)
    splitter = SentencePacker(settings.embed.chunk_size, settings.embed.chunk_overlap, count,
                              lambda text: sentences.get(text) or split_sentences(text))
    out = []
    for paper in papers:
        pieces = splitter.split_text(paper.abstract) or [paper.abstract]
        cursor = 0
        for n, text in enumerate(pieces, 1):
            start = paper.abstract.find(text, cursor)
            cursor = max(cursor, start)
            out.append(Chunk(id=f"{paper.id}::{n}", paper_id=paper.id, number=n, text=text, start=start))
    return out

