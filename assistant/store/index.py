"""The index: chunks and papers in Chroma, a BM25 index beside it, and a manifest.

This is the only module that writes ``index_dir``. Layout::

    index_dir/
      chroma/          Chroma PersistentClient: collections ``chunks`` and ``papers``
      bm25/            bm25s index over paper title + abstract, with ``ids.json``
      manifest.json    embedder id, dimension, chunking, paper-set fingerprint, sources ingested
      .lock            held while an ingest or remove writes

Write order makes an interrupted ingest safe: a paper's chunks are written before its paper
record, and only papers with a record are ever retrieved; stale chunks are swept on the next ingest.
What a read may trust, journals of writes and damage checks are in ``integrity.py``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np  # noqa: E402

from assistant.config import Settings, local_dir  # noqa: E402
from assistant.text.corpus import Paper  # noqa: E402
from assistant.errors import IndexStoreError, InputError  # noqa: E402
from assistant.store import integrity  # noqa: E402
from assistant.store.records import PAGE, meta_to_paper, paged, retry_during_ingest  # noqa: E402,F401  (read here too)

MANIFEST_VERSION = 1
#: Bumped whenever what BM25 indexes changes, so stale BM25 indexes are rebuilt on open.
BM25_VERSION = 2
#: Bumped whenever the layout of the cached chunk-vector matrix changes.
VECTORS_VERSION = 1
CHUNKS = "chunks"
PAPERS = "papers"
META = integrity.META


Progress = Callable[[int, int], None]
#: Sentence vectors of abstracts already quoted by extractive answers (a cache; safe to delete).
SENTENCE_CACHE = "sentences.sqlite"
#: Every paper and where each chunk's text is, for the manifest's fingerprint (a cache: safe to delete).
SNAPSHOT = "papers.json"
SNAPSHOT_VERSION = 1
#: Papers embedded and committed together: an interrupted ingest loses at most one group of work
#: (~30 s). Larger groups pad less: chunks are length-sorted within a group, and 2,000 arxiv-ml papers
#: pad 2.3% of their tokens in groups of 48, 0.6% in groups of 192.
GROUP_SIZE = 192


@dataclass(frozen=True)
class Chunk:
    """A piece of one paper's text, embedded on its own."""

    id: str
    paper_id: str
    number: int
    text: str
    start: int = -1  # offset of ``text`` in the paper's abstract (-1: not a slice of it)


def fingerprint_of(hashes: dict[str, str]) -> str:
    """Identity of a paper set: its ids and content hashes (the BM25 and vector caches are tagged with it)."""
    pairs = sorted(f"{pid}:{h}" for pid, h in hashes.items())
    return hashlib.sha256("\n".join(pairs).encode()).hexdigest()[:16]


@dataclass
class ChunkVectors:
    """Every chunk vector in one matrix, rows grouped by paper: exact dense search is one
    matrix-vector product (a few ms at 60k chunks), with no approximate-index misses."""

    chunk_ids: list[str]
    paper_ids: list[str]  # one per group of rows
    starts: np.ndarray  # first row of each paper's group
    matrix: np.ndarray  # float32, (chunks, dim), unit rows

    @functools.cached_property
    def position(self) -> dict[str, int]:
        """paper id -> its group number (the row of its scores in ``Retriever.dense_all``)."""
        return {pid: i for i, pid in enumerate(self.paper_ids)}

    def rows(self, group: int) -> range:
        """Matrix rows of one paper's chunks."""
        end = int(self.starts[group + 1]) if group + 1 < len(self.starts) else len(self.chunk_ids)
        return range(int(self.starts[group]), end)


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0
    #: of which computing embeddings (the rest is parsing, chunking, Chroma writes and the commit)
    embed_seconds: float = 0.0
    #: with --rebuild: sources the index held before that the new paper set does not come from
    dropped_sources: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"added": len(self.added), "updated": len(self.updated), "unchanged": len(self.unchanged),
                "chunks": self.chunks, "seconds": round(self.seconds, 2), "embed_seconds": round(self.embed_seconds, 2)}


def stem_tokenize(texts: list[str]):
    """BM25 tokenisation: lower-case words, English stop words removed, Snowball-stemmed."""
    bm25s = _bm25s()
    return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), show_progress=False)


@functools.lru_cache(maxsize=1)
def _bm25s():
    """bm25s, imported without scipy, which it only uses (when present) to build its matrix: its numpy
    backend builds the same one (checked on the bundled corpus: equal data, indices and vocabulary), and
    loading and scoring never use scipy. Importing scipy.sparse was ~0.15 s CPU of every ``ask``."""
    import sys

    if "bm25s" in sys.modules or "scipy" in sys.modules:
        import bm25s

        return bm25s
    sys.modules["scipy"] = None  # type: ignore[assignment]  # makes `import scipy.sparse` raise ImportError
    try:
        import bm25s
    finally:
        del sys.modules["scipy"]  # anything else that needs scipy imports it as usual
    return bm25s


def stem_terms(text: str) -> list[str]:
    """One text's stemmed BM25 terms in order, repeats kept (BM25 counts them); [] for stop words only."""
    tokens = stem_tokenize([text])
    if not tokens.ids or not tokens.ids[0]:
        return []
    inv = {v: key for key, v in tokens.vocab.items()}
    return [inv[i] for i in tokens.ids[0]]


@functools.lru_cache(maxsize=1)
def stemmer():
    """The English Snowball stemmer BM25 and theme labels share."""
    import Stemmer

    return Stemmer.Stemmer("english")


# Records hold no Chroma "document": Chroma full-text indexes every document it stores (trigrams in
# SQLite), which nothing here queries (BM25 is bm25s) and which made the writes 2-3x as slow. A paper's
# abstract is in its metadata; a chunk's record points into it (README "Ingest throughput").


def paper_to_meta(paper: Paper) -> dict:
    data = {
        "id": paper.id, "title": paper.title, "source": paper.source, "position": paper.position,
        "authors": list(paper.authors), "url": paper.url, "date": paper.date, "keywords": list(paper.keywords),
        "urls": list(paper.urls), "title_derived": paper.title_derived, "extra": paper.extra,
    }
    return {"paper_id": paper.id, "title": paper.title, "source": paper.source, "position": paper.position,
            "content_hash": paper.content_hash, "abstract": paper.abstract,
            "paper_json": json.dumps(data, ensure_ascii=False, default=str)}


def _paper_dict(paper: Paper) -> dict:
    return {"id": paper.id, "title": paper.title, "abstract": paper.abstract, "source": paper.source,
            "position": paper.position, "authors": list(paper.authors), "url": paper.url, "date": paper.date,
            "keywords": list(paper.keywords), "urls": list(paper.urls), "title_derived": paper.title_derived,
            "extra": paper.extra}


def _paper_from(d: dict) -> Paper:
    return Paper(id=d["id"], title=d["title"], abstract=d["abstract"], source=d["source"], position=d["position"],
                 authors=tuple(d["authors"]), url=d["url"], date=d["date"], keywords=tuple(d["keywords"]),
                 urls=tuple(d["urls"]), title_derived=d["title_derived"], extra=d["extra"])


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


class Index:
    """An opened index. Read through :func:`open_index`; write through :func:`ingest` and :func:`remove`."""

    def __init__(self, settings: Settings, create: bool = False, check: bool = True):
        """``create``: an ingest opening (or making) the index; ``check``: run the integrity checks of a read
        (see integrity.check_open); writers, which hold the lock, and doctor open with ``check=False``."""
        from assistant.embed.embedder import embedder_id

        self.settings = settings
        self.remote = settings.chroma_url
        self.dir = local_dir(settings)
        self.embedder_id = embedder_id(settings.embedder)
        self._embedder = None
        self._bm25 = None
        self._bm25_ids: list[str] | None = None
        self._bm25_pos: dict[str, int] | None = None
        self._papers_cache: dict[str, Paper] | None = None
        self._idf: dict[str, float] | None = None
        self._df: dict[str, int] = {}
        self._term_max: np.ndarray | None = None
        self._sentence_cache: dict = {}
        self._vectors: ChunkVectors | None = None
        self._heartbeat: Callable[[], None] | None = None  # refreshes a server lock while writing
        self.manifest_error: IndexStoreError | None = None
        if self.remote:
            # the server holds everything shared (collections + manifest); self.dir only caches BM25
            self.client = self._client()
        try:
            manifest = self.read_manifest()
        except IndexStoreError as exc:  # garbled: a read says so (check_open); doctor --repair restores it
            manifest, self.manifest_error = None, exc
        where = self.remote or self.dir
        if manifest is None and self.manifest_error is None and not create and (
                self.remote is None and integrity.holds_nothing(self.dir)):
            raise integrity.NoIndex(f"no index at {where}; build one with: assistant ingest [PATHS]")
        if manifest is not None and check:
            self.check_manifest(manifest)
        self.manifest = manifest
        self._snapshot: dict | None = None
        self._snapshot_tried = False
        if self.remote:
            self._open_collections()
        if self.remote and manifest is None and not create and self.count() == 0 and \
                integrity.meta_get(self, "journal") is None:
            raise integrity.NoIndex(f"no index at {where}; build one with: assistant ingest [PATHS]")
        # a read checks the store against its last commit (integrity.check_open). That opens Chroma: a check that
        # skipped it when nothing changed (a stamp of the store's files) missed writes that leave file sizes as
        # they were, so every read pays for the import (docs/speed.md)
        if check and not create:
            integrity.check_open(self)

    def __getattr__(self, name: str):
        """``client``, ``chunks`` and ``papers`` (Chroma), opened when first used."""
        if name in ("client", "chunks", "papers") and "manifest" in self.__dict__:
            if "client" not in self.__dict__:
                self.client = self._client()
            if name != "client":
                self._open_collections()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # --- plumbing -------------------------------------------------------------------------

    def _open_collections(self) -> None:
        from assistant.store.dense import hnsw_metadata

        # a new chunk collection gets the HNSW parameters chosen for search at scale (an existing one keeps its own)
        self.chunks = self.client.get_or_create_collection(CHUNKS, metadata=hnsw_metadata(), embedding_function=None)
        self.papers = self.client.get_or_create_collection(PAPERS, metadata={"hnsw:space": "cosine"},
                                                           embedding_function=None)

    def reopen(self) -> None:
        """Drop Chroma's per-process cache of this store and open it afresh: after another process
        wrote to it, the cached vector segments can lag behind the metadata."""
        from chromadb.api.client import SharedSystemClient

        if not self.remote:
            SharedSystemClient.clear_system_cache()
        self.client = self._client()
        self._open_collections()

    def _client(self):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        if self.remote:
            from urllib.parse import urlparse

            url = urlparse(self.remote if "://" in self.remote else f"http://{self.remote}")
            try:
                client = chromadb.HttpClient(host=url.hostname or "localhost",
                                             port=url.port or (443 if url.scheme == "https" else 8000),
                                             ssl=url.scheme == "https",
                                             settings=ChromaSettings(anonymized_telemetry=False))
                client.heartbeat()
                return client
            except Exception as exc:
                raise IndexStoreError(f"cannot reach the Chroma server at {self.remote} ({type(exc).__name__}); "
                                      "start it (chroma run --host 127.0.0.1 --port 8000) or unset "
                                      "ASSISTANT_CHROMA_URL") from None
        if self.dir.is_dir() and not os.access(self.dir, os.W_OK):
            raise integrity.read_only_error(self.dir)
        try:
            return chromadb.PersistentClient(path=str(self.dir / "chroma"),
                                             settings=ChromaSettings(anonymized_telemetry=False))
        except Exception as exc:  # chroma raises several types for a damaged or foreign directory
            known = integrity.translate(exc, self.settings)
            if known is not None:
                raise known from exc
            raise IndexStoreError(f"cannot open the Chroma store in {self.dir}: {exc}; move {self.dir} aside "
                                  f"and re-ingest with: {integrity.ingest_command(self._sources())}") from exc

    def _sources(self) -> list[str] | None:
        """The sources the manifest records, for advice (None when unreadable or not recorded)."""
        with contextlib.suppress(Exception):
            return json.loads(self.manifest_path.read_text()).get("sources")
        return None

    @property
    def manifest_path(self) -> Path:
        return self.dir / "manifest.json"

    def read_manifest(self) -> dict | None:
        if self.remote:
            return integrity.meta_get(self, "manifest")
        try:
            manifest = json.loads(self.manifest_path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise IndexStoreError(f"{self.manifest_path} is unreadable ({exc})") from None
        if not isinstance(manifest, dict) or "embedder" not in manifest:
            raise IndexStoreError(f"{self.manifest_path} is unreadable (not an index manifest)")
        return manifest

    def check_manifest(self, manifest: dict) -> None:
        built = manifest.get("embedder")
        if built != self.embedder_id:
            raise IndexStoreError(
                f"the index in {self.dir} was built with embedder {built!r}, but {self.embedder_id!r} is configured; "
                f"set ASSISTANT_EMBEDDER back, or re-embed with: {integrity.rebuild_advice(manifest)}")

    def new_manifest(self, dim: int) -> dict:
        return {"version": MANIFEST_VERSION, "embedder": self.embedder_id, "dim": dim,
                "chunking": {"splitter": "SentenceSplitter", "tokenizer": "all-MiniLM-L6-v2 wordpiece",
                             "chunk_size": self.settings.chunk_size, "chunk_overlap": self.settings.chunk_overlap,
                             "title": self.settings.chunk_title},
                "created": time.strftime("%Y-%m-%dT%H:%M:%S")}

    def write_manifest(self, manifest: dict) -> None:
        """One Chroma write records the manifest, the state it describes and the end of the write's
        journal; then (local mode) manifest.json, whose copy in Chroma lets doctor --repair restore it."""
        integrity.meta_write(self, manifest=manifest, state=integrity.state_of(manifest), journal=None)
        self.manifest = manifest
        integrity.crash_point("commit-meta")
        if self.remote:
            return
        tmp = self.manifest_path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(manifest, indent=2))
        os.replace(tmp, self.manifest_path)

    @property
    def state_tag(self) -> str:
        """The committed state derived files must have been built from."""
        return integrity.state_tag(self.manifest)

    @property
    def embedder(self):
        if self._embedder is None:
            from assistant.embed.embedders import get_embedder

            self._embedder = get_embedder(self.settings)
        return self._embedder

    # --- reading --------------------------------------------------------------------------

    @property
    def at_scale(self) -> bool:
        """Searched through Chroma's HNSW index rather than the chunk-vector matrix (see dense.py)."""
        from assistant.store.dense import uses_hnsw

        return uses_hnsw(self)

    def count(self) -> int:
        return self.papers.count()

    def all_papers(self) -> dict[str, Paper]:
        """Every stored paper, in source order (cached until the next write)."""
        if self._papers_cache is None and self.at_scale:  # read as asked, not held (dense.py)
            from assistant.store.dense import PaperShelf

            self._papers_cache = PaperShelf(self)  # type: ignore[assignment]
        if self._papers_cache is None:
            snapshot = self.snapshot()
            if snapshot is not None:
                papers = [_paper_from(d) for d in snapshot["papers"]]
            else:
                papers = [meta_to_paper(m, d) for _, m, d in paged(self.papers, ["metadatas", "documents"])]
            papers.sort(key=lambda p: (p.source, p.position, p.id))
            self._papers_cache = {p.id: p for p in papers}
        return self._papers_cache

    def get_paper(self, paper_id: str) -> Paper:
        if self.snapshot() is not None:
            found = self.all_papers().get(paper_id)
        else:
            got = self.papers.get(ids=[paper_id], include=["metadatas", "documents"])
            found = meta_to_paper(got["metadatas"][0], got["documents"][0]) if got["ids"] else None
        if found is None:
            raise InputError(f"no paper {paper_id!r} in the index; list ids with: assistant papers")
        return found

    def snapshot(self) -> dict | None:
        """The papers and where each chunk's text is, as of the manifest's fingerprint (``papers.json``, written
        by each commit; see :func:`_snapshot_of`), or None when there is none for it (then Chroma is read)."""
        if self._snapshot is None and not self.remote and (self.manifest or {}).get("fingerprint"):
            try:
                data = json.loads((self.dir / SNAPSHOT).read_text(encoding="utf-8"))
                if data.get("version") == SNAPSHOT_VERSION and data.get("fingerprint") == self.manifest["fingerprint"]:
                    self._snapshot = data
            except (OSError, ValueError):
                pass
            if self._snapshot is None and not self._snapshot_tried and os.access(self.dir, os.W_OK):
                self._snapshot_tried = True  # an index built before papers.json existed: written once, here
                self.write_snapshot()
        return self._snapshot

    def write_snapshot(self, committing: bool = False) -> None:
        """Write ``papers.json`` from the store; a cache: failing to write it is harmless. ``committing``: called
        by :meth:`commit` under the ingest lock, so the papers in hand are the manifest's; otherwise what the
        store holds is checked against the manifest's fingerprint (an ingest in another process may be half-way)."""
        fingerprint = (self.manifest or {}).get("fingerprint")
        if self.remote or not fingerprint:
            return
        self._snapshot = None
        if committing:
            papers = list(self.all_papers().values())
        else:
            stored = [(m, d) for _, m, d in paged(self.papers, ["metadatas", "documents"])]
            if fingerprint_of({m["paper_id"]: m["content_hash"] for m, _ in stored}) != fingerprint:
                return
            papers = [meta_to_paper(m, d) for m, d in stored]
        chunks = {cid: [m["paper_id"], m["start"], m["end"]] if "start" in m
                  else [m["paper_id"], m.get("text") or d or ""]  # not a slice, or stored before offsets were
                  for cid, m, d in paged(self.chunks, ["metadatas", "documents"])}
        data = {"version": SNAPSHOT_VERSION, "fingerprint": fingerprint,
                "papers": [_paper_dict(p) for p in papers], "chunks": chunks}
        tmp = self.dir / f"{SNAPSHOT}.{os.getpid()}.tmp"
        try:
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.dir / SNAPSHOT)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        self._snapshot = data

    def bm25(self):
        """(bm25s index, ids) loaded from disk; rebuilt when missing or out of sync."""
        if self._bm25 is None:
            bm25s = _bm25s()
            path = self.dir / "bm25"
            try:
                ids = json.loads((path / "ids.json").read_text())
                if ids.get("state") != self.state_tag or ids.get("version") != BM25_VERSION or \
                        ids.get("crc") != _files_crc(path):
                    raise ValueError("stale or damaged")
                # at scale memory-mapped: a client's memory is what its searches touch of the index
                self._bm25 = bm25s.BM25.load(str(path), mmap=self.at_scale, show_progress=False, verbosity=0)
                self._bm25_ids = ids["ids"]
                self._bm25_pos = self._term_max = None
            except (OSError, ValueError, KeyError, json.JSONDecodeError):
                self.rebuild_bm25()
        return self._bm25, self._bm25_ids

    def bm25_positions(self) -> dict[str, int]:
        """paper id -> its row in the BM25 index (built once per BM25 load)."""
        if self._bm25_pos is None:
            self._bm25_pos = {pid: i for i, pid in enumerate(self.bm25()[1])}
        return self._bm25_pos

    def rebuild_bm25(self) -> None:
        bm25s = _bm25s()
        papers = list(self.all_papers().values())
        retriever = bm25s.BM25(k1=1.2, b=0.75)
        if papers:
            retriever.index(stem_tokenize([bm25_text(p) for p in papers]), show_progress=False)
        ids = [p.id for p in papers]
        self._bm25, self._bm25_ids, self._bm25_pos = (retriever if papers else None), ids, None
        # unique names: readers of one index may rebuild at once (a fixed bm25.tmp made them collide)
        tmp, final, old = _scratch(self.dir, "bm25")
        try:
            if papers:
                retriever.save(str(tmp), show_progress=False)
            else:
                tmp.mkdir(parents=True)
            (tmp / "ids.json").write_text(json.dumps({"state": self.state_tag, "version": BM25_VERSION,
                                                      "crc": _files_crc(tmp), "ids": ids}))
            _swap_in(tmp, final, old)
        except OSError:  # a cache: a read-only or full disk keeps it in memory only
            pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
        if papers and self.at_scale:  # memory-mapped from the saved files, as bm25() loads it; the built one freed
            del retriever
            self._bm25 = bm25s.BM25.load(str(final), mmap=True, show_progress=False, verbosity=0)
        self._idf = None
        self._term_max = None

    def chunk_vectors(self) -> ChunkVectors:
        """All chunk vectors, loaded from ``vectors/`` beside the index (rebuilt from Chroma when that
        copy is missing or belongs to another version of the paper set)."""
        if self._vectors is None:
            self._vectors = self._vectors_from_disk(self.state_tag)
            if self._vectors is None:
                self.rebuild_vectors()
        return self._vectors

    def _vectors_from_disk(self, tag: str | None) -> ChunkVectors | None:
        """The saved matrix if it was built from committed state ``tag`` and its bytes are as saved."""
        path = self.dir / "vectors"
        try:
            meta = json.loads((path / "ids.json").read_text())
            if tag is None or meta.get("state") != tag or meta.get("version") != VECTORS_VERSION:
                return None
            matrix = np.load(path / "matrix.npy")
            if matrix.ndim != 2 or matrix.shape[0] != len(meta["chunk_ids"]) or meta.get("crc") != _crc(matrix):
                return None  # e.g. rows shuffled or overwritten: rebuilt from Chroma
            return ChunkVectors(meta["chunk_ids"], meta["paper_ids"], np.asarray(meta["starts"], dtype=np.int64),
                                matrix)
        except (OSError, ValueError, KeyError, EOFError, json.JSONDecodeError):
            return None

    def rebuild_vectors(self) -> None:
        """Read every chunk vector from Chroma (in pages) and save the matrix."""

        papers = self.all_papers()
        total = retry_during_ingest(self.chunks.count, self.reopen)
        dim = int((self.manifest or {}).get("dim") or 0)
        matrix = np.zeros((total, dim), dtype=np.float32) if dim else None
        rows: list[tuple[str, str, int]] = []  # (chunk id, paper id, chunk number), one per filled row
        seen: set[str] = set()
        for offset in range(0, total, PAGE):
            got = retry_during_ingest(lambda: self.chunks.get(include=["embeddings", "metadatas"], limit=PAGE,
                                                               offset=offset), self.reopen)
            for cid, emb, meta in zip(got["ids"], got["embeddings"], got["metadatas"]):
                # chunks of a paper still being written wait for its record
                if meta.get("paper_id") not in papers or cid in seen or len(rows) >= total:
                    continue
                if matrix is None:
                    matrix = np.zeros((total, len(emb)), dtype=np.float32)
                seen.add(cid)
                matrix[len(rows)] = emb
                rows.append((cid, meta["paper_id"], int(meta.get("chunk") or 0)))
            del got
        self.set_vectors(rows, matrix[:len(rows)] if matrix is not None else np.zeros((0, dim), np.float32))

    def set_vectors(self, rows: list[tuple[str, str, int]], matrix: np.ndarray) -> None:
        """Group chunk rows (chunk id, paper id, chunk number) per paper in source order, keep them as
        the dense search matrix and save them beside the index (a cache: failing to write is harmless)."""
        order = {pid: i for i, pid in enumerate(self.all_papers())}
        perm = sorted((i for i in range(len(rows)) if rows[i][1] in order),
                      key=lambda i: (order[rows[i][1]], rows[i][2], rows[i][0]))
        matrix = np.ascontiguousarray(matrix[perm], dtype=np.float32)
        ids = [rows[i][0] for i in perm]
        paper_ids: list[str] = []
        starts: list[int] = []
        for row, i in enumerate(perm):
            if not paper_ids or paper_ids[-1] != rows[i][1]:
                paper_ids.append(rows[i][1])
                starts.append(row)
        self._vectors = ChunkVectors(ids, paper_ids, np.asarray(starts, dtype=np.int64), matrix)
        tmp, final, old = _scratch(self.dir, "vectors")
        try:
            tmp.mkdir(parents=True)
            np.save(tmp / "matrix.npy", matrix)
            (tmp / "ids.json").write_text(json.dumps({"state": self.state_tag, "crc": _crc(matrix),
                                                      "version": VECTORS_VERSION, "chunk_ids": ids,
                                                      "paper_ids": paper_ids, "starts": starts}))
            _swap_in(tmp, final, old)
        except OSError:
            pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)

    def chunk_texts(self, chunk_ids: list[str]) -> dict[str, str]:
        """chunk id -> its text (a primary-key lookup)."""

        if not chunk_ids:
            return {}
        snapshot = self.snapshot()
        if snapshot is not None and all(cid in snapshot["chunks"] for cid in chunk_ids):
            papers = self.all_papers()
            texts = {}
            for cid in chunk_ids:
                where = snapshot["chunks"][cid]
                paper = papers.get(where[0])
                texts[cid] = where[1] if len(where) == 2 else paper.abstract[where[1]:where[2]] if paper else ""
            return texts
        got = retry_during_ingest(lambda: self.chunks.get(ids=list(chunk_ids), include=["metadatas", "documents"]),
                                   self.reopen)
        texts = {}
        for cid, meta, doc in zip(got["ids"], got["metadatas"], got["documents"]):
            if "start" in meta:  # see chunk_to_meta; indexes before 2026-12-01 stored the text as the document
                paper = self.all_papers().get(meta["paper_id"])
                doc = paper.abstract[meta["start"]:meta["end"]] if paper else None
            texts[cid] = doc or meta.get("text") or ""
        return texts

    def term_weights(self) -> dict[str, float]:
        """IDF of each stemmed term in the BM25 vocabulary (document frequency from the CSC matrix)."""
        if self._idf is None:
            retriever, ids = self.bm25()
            idf: dict[str, float] = {}
            freq: dict[str, int] = {}
            if retriever is not None:
                df = np.diff(np.asarray(retriever.scores["indptr"]))
                n = max(len(ids), 1)
                for term, tid in retriever.vocab_dict.items():
                    if tid < len(df):
                        idf[term] = float(np.log(1 + (n - df[tid] + 0.5) / (df[tid] + 0.5)))
                        freq[term] = int(df[tid])
            self._idf, self._df = idf, freq
        return self._idf

    def doc_freq(self, term: str) -> int:
        """How many papers a stemmed term occurs in (0 if none)."""
        self.term_weights()
        return self._df.get(term, 0)

    def term_ceilings(self) -> np.ndarray:
        """Per BM25 vocabulary id, the highest score that term gives any paper (0 for unused ids)."""
        if self._term_max is None:
            retriever, _ = self.bm25()
            if retriever is None:
                self._term_max = np.zeros(0, dtype=np.float32)
            else:
                data = np.asarray(retriever.scores["data"], dtype=np.float32)
                indptr = np.asarray(retriever.scores["indptr"])
                out = np.zeros(len(indptr) - 1, dtype=np.float32)
                used = np.flatnonzero(np.diff(indptr) > 0)
                if len(used):
                    out[used] = np.maximum.reduceat(data, indptr[used])
                self._term_max = out
        return self._term_max

    def sentence_vectors(self, paper_id: str, abstract: str):
        """(sentences, their vectors) of one abstract, cached for the life of this Index (a chat session
        asks about the same papers again and again) and on disk beside the index (so a new process,
        e.g. the next ``assistant ask``, does not embed them again)."""
        cache = self._sentence_cache
        key = (paper_id, hash(abstract))
        if key not in cache:
            disk_key = hashlib.sha256(f"{self.embedder_id}\n{abstract}".encode()).hexdigest()[:32]
            found = self._sentences_from_disk(disk_key)
            if found is None:
                from assistant.text.sentences import split_sentences
                from assistant.embed.embedder import embed_array

                sentences = split_sentences(abstract)
                found = (sentences, embed_array(self.embedder, sentences))
                self._sentences_to_disk(disk_key, *found)
            cache[key] = found
            if len(cache) > 4096:  # bounded: drop the oldest entry
                cache.pop(next(iter(cache)))
        return cache[key]

    def _sentence_db(self):
        import sqlite3

        db = sqlite3.connect(self.dir / SENTENCE_CACHE, timeout=2)
        db.execute("CREATE TABLE IF NOT EXISTS sentences (key TEXT PRIMARY KEY, sentences TEXT, dim INTEGER, vecs BLOB)")
        return db

    def _sentences_from_disk(self, key: str):
        import sqlite3

        if not (self.dir / SENTENCE_CACHE).exists():
            return None
        try:
            with contextlib.closing(self._sentence_db()) as db:
                row = db.execute("SELECT sentences, dim, vecs FROM sentences WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:  # a cache: unreadable means recompute
            return None
        if row is None:
            return None
        try:  # content-addressed (embedder + abstract), so never stale; a damaged row is recomputed
            sentences = json.loads(row[0])
            vecs = np.frombuffer(row[2], dtype=np.float32).reshape(len(sentences), row[1]) if sentences else \
                np.zeros((0, row[1]), dtype=np.float32)
        except (ValueError, TypeError):
            return None
        return sentences, vecs

    def _sentences_to_disk(self, key: str, sentences: list[str], vecs) -> None:
        import sqlite3

        row = (key, json.dumps(sentences), int(vecs.shape[1]) if vecs.ndim == 2 else 0,
               np.ascontiguousarray(vecs, dtype=np.float32).tobytes())
        for attempt in range(2):
            try:
                with contextlib.closing(self._sentence_db()) as db, db:
                    db.execute("INSERT OR REPLACE INTO sentences VALUES (?, ?, ?, ?)", row)
                return
            except sqlite3.OperationalError:  # read-only or busy index dir: the cache is optional
                return
            except sqlite3.DatabaseError:  # the file is damaged: start the cache afresh, once
                if attempt:
                    return
                try:
                    (self.dir / SENTENCE_CACHE).unlink(missing_ok=True)
                except OSError:
                    return
            except OSError:
                return

    def commit(self, manifest: dict, hashes: dict[str, str] | None = None, papers: list[Paper] | None = None,
               vectors: tuple[list[tuple[str, str, int]], np.ndarray] | None = None) -> None:
        """After a write: record the new paper set in the manifest, bring BM25 and the chunk-vector
        matrix in line with it. An ingest passes what it already holds (every paper's content hash,
        the papers, the chunk vectors) so that a 20k-paper commit need not read the store back:
        Chroma takes hundreds of MB converting such reads."""
        self._uses_hnsw = None  # the write may have taken the index past dense.EMBEDDED_HNSW_ABOVE
        manifest["fingerprint"] = fingerprint_of(hashes) if hashes is not None else self.fingerprint()
        manifest["papers"] = len(hashes) if hashes is not None else self.count()
        manifest["chunks"] = self.chunks.count()
        manifest["generation"] = int(manifest.get("generation") or 0) + 1  # every commit: a new state tag
        manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        self.write_manifest(manifest)
        self._papers_cache = self._snapshot = None
        self._snapshot_tried = True  # written below, from what this commit holds
        if papers is not None:
            ordered = sorted(papers, key=lambda p: (p.source, p.position, p.id))
            self._papers_cache = {p.id: p for p in ordered}
        _release_memory()
        self.rebuild_bm25()
        _release_memory()
        if self.at_scale:  # searched through HNSW: no chunk-vector matrix (dense.py)
            self._vectors = None
        elif vectors is not None:
            self.set_vectors(*vectors)
        else:
            self.rebuild_vectors()
        self.write_snapshot(committing=True)

    def fingerprint(self) -> str:
        return fingerprint_of({m["paper_id"]: m["content_hash"] for _, m in paged(self.papers, ["metadatas"])})

    def stats(self) -> dict:
        m = self.manifest or {}
        return {"index_dir": str(self.dir), "chroma_url": self.remote, "papers": self.count(), "chunks": self.chunks.count(),
                "embedder": m.get("embedder"), "dim": m.get("dim"), "chunking": m.get("chunking"),
                "updated": m.get("updated")}


def _crc(matrix: np.ndarray) -> str:
    """Checksum of a matrix's bytes (order-sensitive: shuffled rows change it); ~1 GB/s."""
    import zlib

    return f"{zlib.crc32(np.ascontiguousarray(matrix).data):08x}:{matrix.shape}"


def _files_crc(path: Path) -> str:
    """Checksum of the files a bm25s index saved (ids.json, which records it, aside)."""
    import zlib

    crc = 0
    for f in sorted(path.iterdir()):
        if f.name != "ids.json" and f.is_file():
            crc = zlib.crc32(f.name.encode() + f.read_bytes(), crc)
    return f"{crc:08x}"


def _scratch(base: Path, name: str) -> tuple[Path, Path, Path]:
    """(temp, final, old) paths for replacing ``base/name``; temp and old are unique to this call."""
    token = f"{os.getpid()}-{os.urandom(4).hex()}"
    return base / f"{name}.tmp-{token}", base / name, base / f"{name}.old-{token}"


def _swap_in(tmp: Path, final: Path, old: Path) -> None:
    """Put the directory ``tmp`` in place of ``final`` (two renames; a reader between them rebuilds)."""
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)


# --- writing ------------------------------------------------------------------------------


@contextlib.contextmanager
def _lock(index_dir: Path):
    import fcntl

    index_dir.mkdir(parents=True, exist_ok=True)
    fh = open(index_dir / ".lock", "a")
    for attempt in range(20):  # a reader's shared probe (integrity.writer_active) holds it for microseconds
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if attempt == 19:
                fh.close()
                raise IndexStoreError(f"another ingest is writing {index_dir}; wait for it to finish") from None
            time.sleep(0.05)
    try:
        yield
    finally:
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()


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
    splitter = SentencePacker(settings.chunk_size, settings.chunk_overlap, count,
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


@functools.lru_cache(maxsize=1)
def _libc():
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:  # not glibc (macOS, musl): nothing to tune
        return None


def _fewer_malloc_arenas() -> None:
    """Cap glibc's per-thread heaps at 2. Chroma's and onnxruntime's worker threads otherwise each get
    a heap that keeps its freed memory: at 5,000 papers this and :func:`_release_memory` cut the
    ingest's peak RSS from 895 to 707 MB. Affects heaps created from now on; a no-op off glibc."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(-8, 2)  # M_ARENA_MAX


def _release_memory() -> None:
    """Hand freed heap pages back to the OS between ingest phases (glibc keeps them otherwise)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def _batches(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def ingest(papers: list[Paper], settings: Settings, rebuild: bool = False,
           progress: Progress | None = None, sources: list[str] | None = None) -> IngestReport:
    """Add papers to the index at ``settings.index_dir``; unchanged papers cost nothing.

    A paper whose content hash changed has its old chunks replaced. With ``rebuild`` the
    index is emptied first (the only way to switch embedder or chunking). ``sources`` (paths, or
    integrity.BUNDLED) are recorded in the manifest so that ``ingest --rebuild`` can re-read them.
    """
    started = time.perf_counter()
    index_dir = local_dir(settings)
    _fewer_malloc_arenas()
    sources = list(sources or [])
    with _lock(index_dir), contextlib.ExitStack() as held:
        if not settings.chroma_url:
            integrity.check_space(index_dir, len(papers))
        index = open_for_write(settings, held, rebuild)
        previous = integrity.recorded(index)
        if rebuild:
            index = emptied(index, settings)
        else:
            integrity.ready_for_ingest(index)
        # an earlier write left the store ahead of its last commit: commit even if nothing is new
        dirty = index.manifest is not None and (integrity.meta_get(index, "journal") is not None
                                                or not integrity.consistent(index))
        integrity.meta_write(index, journal={"op": "ingest", "sources": sources, "owner": integrity.owner(),
                                             "embedder": index.embedder_id, "started": time.time()})
        integrity.crash_point("ingest-journaled")
        report = IngestReport()
        existing = {}
        for pid, meta in paged(index.papers, ["metadatas"]):
            existing[pid] = meta.get("content_hash")
        todo: list[Paper] = []
        for paper in papers:
            if existing.get(paper.id) == paper.content_hash:
                report.unchanged.append(paper.id)
            else:
                (report.updated if paper.id in existing else report.added).append(paper.id)
                todo.append(paper)
        _sweep_orphans(index, set(existing))
        written: list[tuple[list[tuple[str, str, int]], np.ndarray]] = []
        if todo:
            _write(index, todo, settings, report, progress, written)
        integrity.crash_point("ingest-written")
        manifest = index.manifest or index.new_manifest(_probe_dim(index))
        manifest["sources"] = sources if rebuild else list(dict.fromkeys(previous + sources))
        report.dropped_sources = [s for s in previous if s not in sources] if rebuild else []
        if todo or dirty or index.manifest is None or rebuild or "generation" not in manifest:
            before = integrity.state_tag(index.manifest) if index.manifest else None
            hashes = dict(existing)
            hashes.update((p.id, p.content_hash) for p in todo)
            by_id = {p.id: p for p in papers}
            in_hand = [by_id[pid] for pid in hashes if pid in by_id]
            index.commit(manifest, hashes, in_hand if len(in_hand) == len(hashes) else None,
                         _vectors_in_hand(index, before, hashes, {p.id for p in todo}, written))
        else:  # nothing changed: record the sources and end the journal
            index.write_manifest(manifest)
        report.seconds = time.perf_counter() - started
        return report


def _vectors_in_hand(index: Index, before: str | None, hashes: dict[str, str], changed: set[str],
                     written: list) -> tuple[list, np.ndarray] | None:
    """The new chunk-vector matrix without reading Chroma: the previous matrix (if it is on disk for the
    paper set this ingest started from) minus changed papers, plus the chunks just written. None when
    some stored paper is in neither, e.g. papers left by an interrupted ingest: then it is read back."""
    rows = [r for group_rows, _ in written for r in group_rows]
    parts = [vecs for _, vecs in written]
    kept: set[str] = set()
    if len(hashes) > len(changed):
        old = index._vectors_from_disk(before)
        if old is None:
            return None
        keep: list[int] = []
        for group, pid in enumerate(old.paper_ids):
            if pid in hashes and pid not in changed:
                kept.add(pid)
                keep.extend(old.rows(group))
                rows += [(old.chunk_ids[i], pid, n) for n, i in enumerate(old.rows(group), 1)]
        parts.append(old.matrix[keep])
    if set(hashes) - changed - kept:
        return None
    dim = parts[0].shape[1] if parts else int((index.manifest or {}).get("dim") or 0)
    return rows, (np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.float32))


def _probe_dim(index: Index) -> int:
    from assistant.embed.embedder import embed_query

    return int(embed_query(index.embedder, "dimension probe").shape[0])


def _sweep_orphans(index: Index, committed: set[str]) -> None:
    """Delete chunks whose paper record was never written (an interrupted ingest)."""
    if index.chunks.count() == 0:
        return
    orphans = [cid for cid, m in paged(index.chunks, ["metadatas"]) if m.get("paper_id") not in committed]
    for batch in _batches(orphans, 5000):
        index.chunks.delete(ids=batch)


def _write(index: Index, todo: list[Paper], settings: Settings, report: IngestReport,
           progress: Progress | None, written: list | None = None) -> None:
    from assistant.embed.embedder import embed_array

    max_batch = index.client.get_max_batch_size()
    done = 0
    if progress:
        progress(0, len(todo))
    # Work in groups of papers so an interruption loses at most one group's embeddings.
    for group in _batches(todo, GROUP_SIZE):
        # Delete, not overwrite: Chroma's upsert merges new metadata into an existing record, and a
        # changed paper may now have fewer chunks. (New papers have none: the delete costs ~3 ms.)
        stale = [p.id for p in group]
        if stale:
            index.chunks.delete(where={"paper_id": {"$in": stale}})
        chunks = chunk_papers(group, settings)
        by_id = {p.id: p for p in group}
        texts = [embed_text(by_id[c.paper_id], c, settings.chunk_title) for c in chunks]
        embed_started = time.perf_counter()
        embedded = 0

        def on_batch(n: int) -> None:
            """Move the bar as chunks are embedded, not once per group (a group takes ~30 s)."""
            nonlocal embedded
            embedded += n
            progress(done + len(group) * embedded // max(len(chunks), 1), len(todo))

        vecs = embed_array(index.embedder, texts, on_batch=on_batch if progress else None)
        report.embed_seconds += time.perf_counter() - embed_started
        if index.manifest and vecs.shape[1] != int(index.manifest.get("dim", vecs.shape[1])):
            raise IndexStoreError("embedding dimension changed; rebuild with: assistant ingest --rebuild")
        for batch_idx in _batches(list(range(len(chunks))), max_batch):
            index.chunks.upsert(ids=[chunks[i].id for i in batch_idx], embeddings=vecs[batch_idx],
                                metadatas=[chunk_to_meta(chunks[i], by_id[chunks[i].paper_id]) for i in batch_idx])
        # paper vector: mean of its chunk vectors, renormalised (used for paper-level similarity)
        rows_of: dict[str, list[int]] = {}
        for i, c in enumerate(chunks):
            rows_of.setdefault(c.paper_id, []).append(i)
        paper_vecs = []
        for p in group:
            v = vecs[rows_of[p.id]].mean(axis=0)
            paper_vecs.append(v / max(float(np.linalg.norm(v)), 1e-12))
        for batch in _batches(list(range(len(group))), max_batch):
            index.papers.upsert(ids=[group[i].id for i in batch], embeddings=np.asarray([paper_vecs[i] for i in batch]),
                                metadatas=[paper_to_meta(group[i]) for i in batch])
        integrity.crash_point("ingest-group")
        if written is not None:  # kept for the commit's chunk-vector matrix
            written.append(([(c.id, c.paper_id, c.number) for c in chunks], vecs))
        if index._heartbeat is not None:  # server mode: keep the server's ingest lock from expiring
            index._heartbeat()
        if done % (GROUP_SIZE * 20) == 0:
            _release_memory()
        report.chunks += len(chunks)
        done += len(group)
        if progress:
            progress(done, len(todo))


def remove(paper_ids: list[str], settings: Settings) -> list[str]:
    """Delete papers and resync BM25 and the manifest; crash-safe: a journal naming the papers is
    written first, and the next command finishes a remove a crash interrupted (integrity.complete_remove)."""
    with _lock(local_dir(settings)), contextlib.ExitStack() as held:
        if not settings.chroma_url:
            integrity.check_space(local_dir(settings))
        index = open_for_write(settings, held, rebuild=False, create=False)
        integrity.ready_for_remove(index)
        found = index.papers.get(ids=list(paper_ids))["ids"]
        missing = sorted(set(paper_ids) - set(found))
        if missing:
            raise InputError(f"not in the index: {', '.join(missing)}; list ids with: assistant papers")
        integrity.meta_write(index, journal={"op": "remove", "ids": found, "owner": integrity.owner(),
                                             "started": time.time()})
        integrity.crash_point("remove-journaled")
        integrity.complete_remove(index, found)
        return found


def open_index(settings: Settings, build_default: bool = True, progress: Progress | None = None) -> Index:
    """Open the index; only when its directory holds nothing, build it from the bundled corpus first
    (or finish such a build that was interrupted). Anything else wrong is an IndexStoreError."""
    try:
        return Index(settings)
    except integrity.NoIndex:
        if not build_default:
            raise
    from assistant.text.corpus import load_papers

    papers, _ = load_papers()
    ingest(papers, settings, progress=progress, sources=[integrity.BUNDLED])
    return Index(settings)


def open_for_write(settings, held: contextlib.ExitStack, rebuild: bool, create: bool = True):
    """Open the index for a writer that holds the local lock; in server mode take the server's lock too
    (clients with different local directories share one server)."""
    try:
        index = Index(settings, create=create, check=False)
    except IndexStoreError:
        if not rebuild or settings.chroma_url:
            raise
        return None  # a store too damaged to open: --rebuild replaces it anyway
    if index.remote:
        index._heartbeat = held.enter_context(integrity.server_lock(index.client, index.remote))
    return index


def emptied(index, settings):
    """An empty index in place of ``index`` (``ingest --rebuild``)."""
    from chromadb.api.client import SharedSystemClient

    heartbeat = index._heartbeat if index is not None else None
    if settings.chroma_url:
        for name in (CHUNKS, PAPERS, integrity.META):
            with contextlib.suppress(Exception):  # already gone
                index.client.delete_collection(name)
    else:
        base = local_dir(settings)
        for sub in ("chroma", "bm25", "vectors", "manifest.json"):
            target = base / sub
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        SharedSystemClient.clear_system_cache()  # this process's handle on the deleted store
    fresh = Index(settings, create=True, check=False)
    fresh._heartbeat = heartbeat
    return fresh


def rebuild_sources(settings) -> list[Path] | None:
    """The paths ``ingest --rebuild`` (no paths) re-reads: the sources the index records. None means the
    bundled corpus, allowed only when that is what the index holds or the index holds nothing."""
    from assistant.text.corpus import bundled_corpus
    from assistant.errors import InputError

    if not settings.chroma_url and integrity.holds_nothing(local_dir(settings)):
        return None
    try:
        index = Index(settings, create=True, check=False)
    except IndexStoreError:
        index = None
    sources = integrity.recorded(index) if index is not None else []
    if not sources and index is None:  # a store too damaged to open: the manifest file may still say
        with contextlib.suppress(Exception):
            sources = json.loads((local_dir(settings) / "manifest.json").read_text()).get("sources") or []
    count = index.count() if index is not None else None
    if not sources:
        if not count:
            return None
        raise InputError(f"the {count} papers in {index.remote or index.dir} came from files this index does not "
                         "record; name them: assistant ingest --rebuild FILES (to replace them with the bundled "
                         f"corpus: assistant ingest --rebuild {shlex.quote(str(bundled_corpus()))})")
    missing = [s for s in sources if s != integrity.BUNDLED and not Path(s).exists()]
    if missing:
        raise InputError(f"cannot rebuild: {', '.join(missing)}, recorded as ingested, no longer exist; restore "
                         "them, or name what the index should hold: assistant ingest --rebuild FILES (nothing "
                         "was changed)")
    return [bundled_corpus() if s == integrity.BUNDLED else Path(s) for s in sources]
