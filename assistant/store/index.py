"""The index, read side: chunks and papers in Chroma, the manifest, and the caches derived from them.

Layout of ``index_dir`` (every path under it is named in layout.py)::

    index_dir/
      chroma/          Chroma PersistentClient: collections ``chunks``, ``papers`` and ``meta``
      bm25/            bm25s index over paper title + abstract, with ``ids.json`` (lexical.py)
      vectors/         every chunk vector in one matrix (vectors.py)
      sentences.sqlite sentence vectors of the abstracts (sentence_cache.py)
      papers.json      every paper and where each chunk's text is (a cache of Chroma)
      manifest.json    embedder id, dimension, chunking, paper-set fingerprint, sources ingested
      chats.sqlite     saved chat sessions (chat/history.py)
      map/             the map's layouts (qa/landscape.py)
      .lock            held while an ingest or remove writes (ingest.py)

Writes go through ingest.py; what a read may trust, journals of writes and damage checks are in integrity.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from assistant.config import Settings, local_dir  # noqa: E402
from assistant.errors import IndexStoreError, InputError  # noqa: E402
from assistant.store import faults, integrity  # noqa: E402
from assistant.store.chunks import paper_dict, paper_from_dict  # noqa: E402
from assistant.store.files import fingerprint_of, write_atomically  # noqa: E402
from assistant.store.layout import CHROMA, MANIFEST, SNAPSHOT  # noqa: E402
from assistant.store.lexical import LexicalSide  # noqa: E402
from assistant.store.memory import release_memory  # noqa: E402
from assistant.store.records import meta_to_paper, paged, retry_during_ingest  # noqa: E402
from assistant.store.sentence_cache import SentenceSide  # noqa: E402
from assistant.store.vectors import ChunkVectors, VectorSide  # noqa: E402
from assistant.text.corpus import Paper  # noqa: E402

if TYPE_CHECKING:  # numpy is imported where used: `papers` and `show` need none (~0.3 s CPU)
    import numpy as np

MANIFEST_VERSION = 1
CHUNKS = "chunks"
PAPERS = "papers"
META = integrity.META


Progress = Callable[[int, int], None]
#: The layout version of papers.json (every paper and where each chunk's text is; a cache, safe to delete).
SNAPSHOT_VERSION = 2  # 2: a header line with a checksum of the rest


class Index(LexicalSide, VectorSide, SentenceSide):
    """An opened index. Read through :func:`open_index`; write through :func:`ingest` and :func:`remove`."""

    def __init__(self, settings: Settings, create: bool = False, check: bool = True):
        """``create``: an ingest opening (or making) the index; ``check``: run the integrity checks of a read
        (see integrity.check_open); writers, which hold the lock, and doctor open with ``check=False``."""
        from assistant.embed.embedders import embedder_id

        self.settings = settings
        self.remote = settings.index.chroma_url
        self.dir = local_dir(settings)
        self.embedder_id = embedder_id(settings.embed.embedder)
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
        #: refreshes the server's lock while a writer holds it (server mode; set by whoever takes the lock)
        self.heartbeat: Callable[[], None] | None = None
        #: whether the dense side searches Chroma's HNSW index (dense.uses_hnsw decides; None: not decided yet)
        self.searches_hnsw: bool | None = None
        #: derived files (bm25, vectors) that could not be written, and why (doctor --repair reports them)
        self.derived_errors: dict[str, str] = {}
        self.manifest_error: IndexStoreError | None = None
        if self.remote:
            # the server holds everything shared (collections + manifest); self.dir only caches BM25
            self.client = self._client()
        else:
            faults.check_link(self.dir)  # a link to an unmounted drive: said as such, not "no index here"
        self._manifest_mark = self._stat_manifest()  # what follow() compares with (local mode)
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
        #: set by integrity.verified_directly: the live counts it read (the store as the manifest says), and whether the
        #: store was written since the commit (then its papers are read from it, not from the commit's snapshot)
        self.verified_counts: dict | None = None
        self.store_moved = False
        if self.remote:
            self.open_collections()
        if self.remote and manifest is None and not create and self.count() == 0 and \
                integrity.meta_get(self, "journal") is None:
            raise integrity.NoIndex(f"no index at {where}; build one with: assistant ingest [PATHS]")
        # a read checks the store against its last commit (integrity.check_open): a healthy local store by reading
        # chroma.sqlite3 directly, so that `papers`, `show` and `ask` import no chromadb (docs/speed.md); anything
        # else through Chroma
        if check and not create:
            integrity.check_open(self)

    def __getattr__(self, name: str):
        """``client``, ``chunks`` and ``papers`` (Chroma), opened when first used."""
        if name in ("client", "chunks", "papers") and "manifest" in self.__dict__:
            if "client" not in self.__dict__:
                self.client = self._client()
            if name != "client":
                self.open_collections()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # --- plumbing -------------------------------------------------------------------------

    def open_collections(self) -> None:
        """Open (or create) the chunk and paper collections of the client."""
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
        self.open_collections()

    def _client(self):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        if self.remote:
            from urllib.parse import urlparse

            url = urlparse(self.remote if "://" in self.remote else f"http://{self.remote}")
            try:
                host, ssl = url.hostname or "localhost", url.scheme == "https"
                port = url.port or (443 if ssl else 8000)
                # chromadb's own first request (made as its client is built) waits forever
                faults.answers_in_time(host, port, ssl, self.settings.tuning.chroma_timeout)
                client = chromadb.HttpClient(host=host, port=port, ssl=ssl,
                                             settings=ChromaSettings(anonymized_telemetry=False))
                faults.bound_requests(client, self.settings.tuning.chroma_timeout)
                client.heartbeat()
                return client
            except Exception as exc:
                raise IndexStoreError(f"cannot reach the Chroma server at {self.remote} "
                                      f"({faults.what_failed(exc, self.settings.tuning.chroma_timeout)}); start it "
                                      f"({faults.chroma_run(self.remote)}), or drop --chroma-url / ASSISTANT_CHROMA_URL to use a local "
                                      "index") from None
        faults.check_access(self.dir)
        if self.dir.is_dir() and not os.access(self.dir, os.W_OK):
            raise faults.read_only_error(self.dir)
        try:
            return chromadb.PersistentClient(path=str(self.dir / CHROMA),
                                             settings=ChromaSettings(anonymized_telemetry=False))
        except Exception as exc:  # chroma raises several types for a damaged or foreign directory
            known = faults.translate(exc, self.settings) or (faults.disk_full_error(self.dir)
                                                              if faults.disk_full(self.dir) else None)
            if known is not None:  # a full disk is not damage: moving the index aside was the costly wrong advice
                raise known from exc
            if (self.dir / SNAPSHOT).is_file():  # the papers are in papers.json: a repair re-embeds them
                raise IndexStoreError(f"cannot open the Chroma store in {self.dir}: {exc}; move {self.dir / CHROMA} "
                                      f"aside (mv {self.dir / CHROMA} {self.dir / CHROMA}.damaged), then run: "
                                      "assistant doctor --repair (it re-embeds the papers from papers.json)") from exc
            raise IndexStoreError(f"cannot open the Chroma store in {self.dir}: {exc}; move {self.dir} aside "
                                  f"and re-ingest with: {integrity.ingest_command(self._sources())}") from exc

    def _sources(self) -> list[str] | None:
        """The sources the manifest records, for advice (None when unreadable or not recorded)."""
        with contextlib.suppress(Exception):
            return json.loads(self.manifest_path.read_text()).get("sources")
        return None

    @property
    def manifest_path(self) -> Path:
        return self.dir / MANIFEST

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
                             "chunk_size": self.settings.embed.chunk_size, "chunk_overlap": self.settings.embed.chunk_overlap,
                             "title": self.settings.embed.chunk_title},
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

    def follow(self) -> bool:
        """Take up a commit another process made since this index was opened (True if there was one). A reader that
        lives across commands (a chat, a library user) calls it before each search, so its BM25, papers and derived
        caches, built from the commit it opened, do not hide another process's ingest or remove (a removed paper
        cited by an open chat). Local: a stat of manifest.json (microseconds), read again only when it changed.
        Server: one read of the meta collection (4 ms to a local ``chroma run`` on a loaded 2-core machine). An
        ingest under way is not followed: its journal leaves the committed state as it was."""
        if self.manifest is None:
            return False
        if not self.remote:
            return self._follow_local()
        meta = integrity.meta_read(self)
        try:
            state, manifest = json.loads(meta.get("state") or "null"), json.loads(meta.get("manifest") or "null")
        except ValueError:
            return False
        if not state or not manifest or state == integrity.state_of(self.manifest) or \
                integrity.state_of(manifest) != state:
            return False  # unchanged, or the collections are being rebuilt: the next commit is followed
        self._take_up(manifest)
        self.open_collections()  # an ingest --rebuild made new collections
        return True

    def _stat_manifest(self) -> tuple | None:
        if self.remote:
            return None
        try:
            seen = os.stat(self.dir / MANIFEST)
        except OSError:
            return None
        return seen.st_ino, seen.st_mtime_ns, seen.st_size

    def _follow_local(self) -> bool:
        mark = self._stat_manifest()
        if mark is None or mark == self._manifest_mark:
            return False
        self._manifest_mark = mark
        try:
            manifest = self.read_manifest()
        except IndexStoreError:
            return False
        if manifest is None or integrity.state_of(manifest) == integrity.state_of(self.manifest):
            return False
        self._take_up(manifest)
        if "chromadb" in sys.modules and "client" in self.__dict__:
            self.reopen()  # Chroma's per-process cache of the store lags behind another process's writes
        return True

    def _take_up(self, manifest: dict) -> None:
        """Read from ``manifest``'s commit on: every cache built from the previous one is dropped."""
        self.check_manifest(manifest)  # another process rebuilt it with another embedder
        self.manifest = manifest
        self._bm25 = self._bm25_ids = self._bm25_pos = self._idf = self._term_max = None
        self._df = {}
        self._papers_cache = self._vectors = self._snapshot = None
        self._snapshot_tried = False
        self.searches_hnsw = None
        self.verified_counts, self.store_moved = None, False

    def forget_papers(self) -> None:
        """Drop the papers read so far: the next use reads them again (after a write this process did not commit)."""
        self._papers_cache = None

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
                papers = list(snapshot.get("parsed") or [paper_from_dict(d) for d in snapshot["papers"]])
            else:
                papers = [meta_to_paper(m, d) for _, m, d in paged(self.papers, ["metadatas", "documents"])]
            papers.sort(key=lambda p: (p.origin or p.source, p.position, p.id))
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
        by each commit; see :meth:`write_snapshot`), or None when there is none for it (then Chroma is read).
        A damaged one is never served: its bytes carry a checksum, and its papers must make the manifest's
        fingerprint (every id, title and abstract as committed); otherwise it is written again from Chroma."""
        if self._snapshot is None and not self.remote and not self.store_moved and \
                (self.manifest or {}).get("fingerprint"):
            self._snapshot = read_snapshot(self.dir / SNAPSHOT, self.manifest["fingerprint"])
            if self._snapshot is None and not self._snapshot_tried and os.access(self.dir, os.W_OK):
                self._snapshot_tried = True  # missing, stale or damaged: written once, here
                self.write_snapshot()
        return self._snapshot

    def snapshot_status(self) -> str:
        """papers.json for doctor: ok, missing, stale or damaged."""
        fingerprint = (self.manifest or {}).get("fingerprint")
        if self.remote or not fingerprint:
            return "ok"
        path = self.dir / SNAPSHOT
        if not path.exists():
            return "missing"
        if read_snapshot(path, fingerprint) is not None:
            return "ok"
        header = _snapshot_header(path)
        if header is not None and (header.get("version") != SNAPSHOT_VERSION or header.get("fingerprint") != fingerprint):
            return "stale (written for another state of the store)"
        return "damaged (checksum or content mismatch)"

    def write_snapshot(self, committing: bool = False) -> None:
        """Write ``papers.json`` from the store; a cache: failing to write it is harmless. ``committing``: called
        by :meth:`commit` under the ingest lock, so the papers in hand are the manifest's; otherwise what the
        store holds is checked against the manifest's fingerprint (an ingest in another process may be half-way).
        Layout: one header line (version, fingerprint, CRC32 of the rest), then the papers and chunks as JSON."""
        import zlib

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
        if fingerprint_of({p.id: p.content_hash for p in papers}) != fingerprint:
            return  # what is in hand is not what was committed (a damaged cache read): never saved
        chunks = {cid: [m["paper_id"], m["start"], m["end"]] if "start" in m
                  else [m["paper_id"], m.get("text") or d or ""]  # not a slice, or stored before offsets were
                  for cid, m, d in paged(self.chunks, ["metadatas", "documents"])}
        data = {"papers": [paper_dict(p) for p in papers], "chunks": chunks}
        payload = json.dumps(data, ensure_ascii=False).encode("utf-8")
        header = {"version": SNAPSHOT_VERSION, "fingerprint": fingerprint, "crc": f"{zlib.crc32(payload):08x}"}
        try:
            write_atomically(self.dir / SNAPSHOT, json.dumps(header).encode() + b"\n" + payload)
        except OSError:
            return
        self._snapshot = {**header, **data}

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


    def commit(self, manifest: dict, hashes: dict[str, str] | None = None, papers: list[Paper] | None = None,
               vectors: tuple[list[tuple[str, str, int]], np.ndarray] | None = None) -> None:
        """After a write: record the new paper set in the manifest, bring BM25 and the chunk-vector
        matrix in line with it. An ingest passes what it already holds (every paper's content hash,
        the papers, the chunk vectors) so that a 20k-paper commit need not read the store back:
        Chroma takes hundreds of MB converting such reads."""
        self.searches_hnsw = None  # the write may have taken the index past dense.EMBEDDED_HNSW_ABOVE
        manifest["fingerprint"] = fingerprint_of(hashes) if hashes is not None else self.fingerprint()
        manifest["papers"] = len(hashes) if hashes is not None else self.count()
        manifest["chunks"] = self.chunks.count()
        manifest["generation"] = int(manifest.get("generation") or 0) + 1  # every commit: a new state tag
        manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        seq = integrity.store_seq(self)  # where the store's log stands: a write after this commit moves it
        if seq is None:
            manifest.pop("seq", None)
        else:
            manifest["seq"] = seq
        self.verified_counts, self.store_moved = None, False
        self.write_manifest(manifest)
        self._papers_cache = self._snapshot = None
        self._snapshot_tried = True  # written below, from what this commit holds
        if papers is not None:
            ordered = sorted(papers, key=lambda p: (p.origin or p.source, p.position, p.id))
            self._papers_cache = {p.id: p for p in ordered}
        release_memory()
        self.rebuild_bm25()
        release_memory()
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


# --- writing ------------------------------------------------------------------------------


def _snapshot_header(path: Path) -> dict | None:
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.readline())
    except (OSError, ValueError):
        return None


def read_snapshot(path: Path, fingerprint: str) -> dict | None:
    """papers.json if it was written for ``fingerprint`` and is intact: its checksum holds, and its papers' ids and
    content hashes make that fingerprint (a changed byte in a title or an abstract fails both)."""
    import zlib

    try:
        raw = path.read_bytes()
        head, _, payload = raw.partition(b"\n")
        header = json.loads(head)
        if not isinstance(header, dict) or header.get("version") != SNAPSHOT_VERSION or \
                header.get("fingerprint") != fingerprint or header.get("crc") != f"{zlib.crc32(payload):08x}":
            return None
        data = json.loads(payload)
        papers = [paper_from_dict(d) for d in data["papers"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if fingerprint_of({p.id: p.content_hash for p in papers}) != fingerprint:
        return None
    return {**header, **data, "parsed": papers}
