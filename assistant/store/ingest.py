"""Writing the index: ingest and remove, under a lock, journaled so that a crash at any point is finished or
undone by the next command (integrity.py), and ``ingest --rebuild``.

Write order makes an interrupted ingest safe: a paper's chunks are written before its paper record, and only
papers with a record are ever retrieved; stale chunks are swept on the next ingest.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from assistant.config import Settings, local_dir
from assistant.errors import IndexStoreError, InputError
from assistant.store import integrity
from assistant.store.chunks import chunk_papers, chunk_to_meta, embed_text, paper_to_meta
from assistant.store.index import CHUNKS, PAPERS, Index, Progress
from assistant.store.memory import fewer_malloc_arenas, release_memory
from assistant.store.server_lock import owner, server_lock
from assistant.store.records import paged
from assistant.text.corpus import Paper
from assistant.store.layout import BM25, CHROMA, LOCK, MANIFEST, VECTORS


#: Papers embedded and committed together: an interrupted ingest loses at most one group of work
#: (~30 s). Larger groups pad less: chunks are length-sorted within a group, and 2,000 arxiv-ml papers
#: pad 2.3% of their tokens in groups of 48, 0.6% in groups of 192.
GROUP_SIZE = 192


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


@contextlib.contextmanager
def write_lock(index_dir: Path):
    import fcntl

    index_dir.mkdir(parents=True, exist_ok=True)
    fh = open(index_dir / LOCK, "a")
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


def batches(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def ingest(papers: list[Paper], settings: Settings, rebuild: bool = False,
           progress: Progress | None = None, sources: list[str] | None = None) -> IngestReport:
    """Add papers to the index at ``settings.index.dir``; unchanged papers cost nothing.

    A paper whose content hash changed has its old chunks replaced. With ``rebuild`` the
    index is emptied first (the only way to switch embedder or chunking). ``sources`` (paths, or
    integrity.BUNDLED) are recorded in the manifest so that ``ingest --rebuild`` can re-read them.
    """
    started = time.perf_counter()
    index_dir = local_dir(settings)
    fewer_malloc_arenas()
    sources = list(sources or [])
    with write_lock(index_dir), contextlib.ExitStack() as held:
        if not settings.index.chroma_url:
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
        integrity.meta_write(index, journal={"op": "ingest", "sources": sources, "owner": owner(),
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
            write_papers(index, todo, settings, report, progress, written)
        integrity.crash_point("ingest-written")
        manifest = index.manifest or index.new_manifest(probe_dim(index))
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
        old = index.vectors_from_disk(before)
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


def probe_dim(index: Index) -> int:
    from assistant.embed.embedder import embed_query

    return int(embed_query(index.embedder, "dimension probe").shape[0])


def _sweep_orphans(index: Index, committed: set[str]) -> None:
    """Delete chunks whose paper record was never written (an interrupted ingest)."""
    if index.chunks.count() == 0:
        return
    orphans = [cid for cid, m in paged(index.chunks, ["metadatas"]) if m.get("paper_id") not in committed]
    for batch in batches(orphans, 5000):
        index.chunks.delete(ids=batch)


def write_papers(index: Index, todo: list[Paper], settings: Settings, report: IngestReport,
           progress: Progress | None, written: list | None = None) -> None:
    from assistant.embed.embedder import embed_array

    max_batch = index.client.get_max_batch_size()
    done = 0
    if progress:
        progress(0, len(todo))
    # Work in groups of papers so an interruption loses at most one group's embeddings.
    for group in batches(todo, GROUP_SIZE):
        # Delete, not overwrite: Chroma's upsert merges new metadata into an existing record, and a
        # changed paper may now have fewer chunks. (New papers have none: the delete costs ~3 ms.)
        stale = [p.id for p in group]
        if stale:
            index.chunks.delete(where={"paper_id": {"$in": stale}})
        chunks = chunk_papers(group, settings)
        by_id = {p.id: p for p in group}
        texts = [embed_text(by_id[c.paper_id], c, settings.embed.chunk_title) for c in chunks]
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
        for batch_idx in batches(list(range(len(chunks))), max_batch):
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
        for batch in batches(list(range(len(group))), max_batch):
            index.papers.upsert(ids=[group[i].id for i in batch], embeddings=np.asarray([paper_vecs[i] for i in batch]),
                                metadatas=[paper_to_meta(group[i]) for i in batch])
        integrity.crash_point("ingest-group")
        if written is not None:  # kept for the commit's chunk-vector matrix
            written.append(([(c.id, c.paper_id, c.number) for c in chunks], vecs))
        if index._heartbeat is not None:  # server mode: keep the server's ingest lock from expiring
            index._heartbeat()
        if done % (GROUP_SIZE * 20) == 0:
            release_memory()
        report.chunks += len(chunks)
        done += len(group)
        if progress:
            progress(done, len(todo))


def remove(paper_ids: list[str], settings: Settings) -> list[str]:
    """Delete papers and resync BM25 and the manifest; crash-safe: a journal naming the papers is
    written first, and the next command finishes a remove a crash interrupted (integrity.complete_remove)."""
    with write_lock(local_dir(settings)), contextlib.ExitStack() as held:
        if not settings.index.chroma_url:
            integrity.check_space(local_dir(settings))
        index = open_for_write(settings, held, rebuild=False, create=False)
        integrity.ready_for_remove(index)
        found = index.papers.get(ids=list(paper_ids))["ids"]
        missing = sorted(set(paper_ids) - set(found))
        if missing:
            raise InputError(f"not in the index: {', '.join(missing)}; list ids with: assistant papers")
        integrity.meta_write(index, journal={"op": "remove", "ids": found, "owner": owner(),
                                             "started": time.time()})
        integrity.crash_point("remove-journaled")
        integrity.complete_remove(index, found)
        return found


def open_for_write(settings, held: contextlib.ExitStack, rebuild: bool, create: bool = True):
    """Open the index for a writer that holds the local lock; in server mode take the server's lock too
    (clients with different local directories share one server)."""
    try:
        index = Index(settings, create=create, check=False)
    except IndexStoreError:
        if not rebuild or settings.index.chroma_url:
            raise
        return None  # a store too damaged to open: --rebuild replaces it anyway
    if index.remote:
        index._heartbeat = held.enter_context(server_lock(index.client, index.remote))
    return index


def emptied(index, settings):
    """An empty index in place of ``index`` (``ingest --rebuild``)."""
    from chromadb.api.client import SharedSystemClient

    heartbeat = index._heartbeat if index is not None else None
    if settings.index.chroma_url:
        for name in (CHUNKS, PAPERS, integrity.META):
            with contextlib.suppress(Exception):  # already gone
                index.client.delete_collection(name)
    else:
        base = local_dir(settings)
        for sub in (CHROMA, BM25, VECTORS, MANIFEST):
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

    if not settings.index.chroma_url and integrity.holds_nothing(local_dir(settings)):
        return None
    try:
        index = Index(settings, create=True, check=False)
    except IndexStoreError:
        index = None
    sources = integrity.recorded(index) if index is not None else []
    if not sources and index is None:  # a store too damaged to open: the manifest file may still say
        with contextlib.suppress(Exception):
            sources = json.loads((local_dir(settings) / MANIFEST).read_text()).get("sources") or []
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

