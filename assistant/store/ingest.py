"""Writing the index: ingest and remove, under a lock, journaled so that a crash at any point is finished or
undone by the next command (integrity.py), and ``ingest --rebuild``.

Write order makes an interrupted ingest safe: a paper's chunks are written before its paper record, and only
papers with a record are ever retrieved; stale chunks are swept on the next ingest.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from assistant.config import Settings, local_dir
from assistant.errors import IndexStoreError, InputError
from assistant.store import faults, integrity, journal
from assistant.store.chunks import chunk_papers, chunk_to_meta, embed_text, paper_to_meta
from assistant.store.index import CHUNKS, PAPERS, Index, Progress
from assistant.store.memory import fewer_malloc_arenas, release_memory
from assistant.store.server_lock import owner, server_lock
from assistant.store.records import batches, paged
from assistant.text.corpus import Paper
from assistant.store.layout import ASIDE, LOCK, MANIFEST


#: Papers embedded and committed together: an interrupted ingest loses at most one group of work
#: (~30 s). Larger groups pad less: chunks are length-sorted within a group, and 2,000 arxiv-ml papers
#: pad 2.3% of their tokens in groups of 48, 0.6% in groups of 192.
GROUP_SIZE = 192


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    #: papers of the files read that those files no longer hold (an edited file: the index equals the file)
    removed: list[str] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0
    #: of which computing embeddings (the rest is parsing, chunking, Chroma writes and the commit)
    embed_seconds: float = 0.0
    #: with --rebuild: sources the index held before that the new paper set does not come from
    dropped_sources: list[str] = field(default_factory=list)
    #: interrupted writes this command finished or undid first, said to the user
    recovered: list[str] = field(default_factory=list)
    #: stored papers of a file read now that this read did not find, kept since some of its records were skipped
    kept_unread: list[str] = field(default_factory=list)
    #: (new paper left out, the stored paper of another file with the same abstract)
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    #: stored papers of a file no longer in a folder this ingest read (deleted or moved): kept, and said
    gone_files: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"added": len(self.added), "updated": len(self.updated), "unchanged": len(self.unchanged),
                "removed": len(self.removed), "chunks": self.chunks, "seconds": round(self.seconds, 2),
                "embed_seconds": round(self.embed_seconds, 2), "recovered": list(self.recovered),
                "kept_unread": list(self.kept_unread), "gone_files": list(self.gone_files)}


@contextlib.contextmanager
def write_lock(index_dir: Path, wait: bool = True):
    """The index's write lock; ``wait``: try for ~1 s (a reader's probe holds it for microseconds), else once."""
    import fcntl

    faults.check_link(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    fh = open(index_dir / LOCK, "a")
    attempts = 20 if wait else 1
    for attempt in range(attempts):  # a reader's shared probe (integrity.writer_active) holds it for microseconds
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if attempt == attempts - 1:
                fh.close()
                raise IndexStoreError(f"another ingest is writing {index_dir}; wait for it to finish") from None
            time.sleep(0.05)
    try:
        yield
    finally:
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()


def ingest(papers: list[Paper], settings: Settings, rebuild: bool = False,
           progress: Progress | None = None, sources: list[str] | None = None,
           partial: frozenset[str] = frozenset()) -> IngestReport:
    """Add papers to the index at ``settings.index.dir``; unchanged papers cost nothing.

    The papers of each file read replace what the index held from that file (text/ids.py): a changed abstract
    is updated, one no longer in the file is removed. With ``rebuild`` a new index is built beside the old one
    and swapped in (the only way to switch embedder or chunking; aside.py). ``sources`` (paths, or
    integrity.BUNDLED) are recorded in the manifest so that ``ingest --rebuild`` can re-read them. ``partial``: the
    files (``Paper.origin``) some of whose records could not be read: their stored papers this read did not find
    are kept, not removed. Journaled (journal.py): a kill is finished by the next command, Ctrl-C undoes what was
    written.
    """
    started = time.perf_counter()
    index_dir = local_dir(settings)
    fewer_malloc_arenas()
    sources = list(sources or [])
    with write_lock(index_dir), contextlib.ExitStack() as held:
        report = IngestReport()
        if not settings.index.chroma_url:
            faults.check_space(index_dir, len(papers))
            report.recovered += recover_aside(index_dir)
            if rebuild:
                return _rebuilt(papers, settings, progress, sources, report, started)
        index = open_for_write(settings, held, rebuild)
        previous = integrity.recorded(index)
        if rebuild:  # server mode: the collections are emptied under a journal naming the sources
            index = emptied(index, settings, sources)
        else:
            report.recovered += finish_pending(index, settings, progress)
            integrity.ready_for_ingest(index)
        held = sources if rebuild else list(dict.fromkeys(previous + sources))  # what the index will hold
        _write(index, papers, settings, progress, report, held, partial=partial, read=sources)
        report.dropped_sources = [s for s in previous if s not in sources] if rebuild else []
        report.seconds = time.perf_counter() - started
        return report


def _write(index: Index, papers: list[Paper], settings: Settings, progress: Progress | None, report: IngestReport,
           sources: list[str], history: tuple | None = None, partial: frozenset[str] = frozenset(),
           read: list[str] | None = None) -> list[Paper]:
    """Plan, journal, write and commit one ingest into an opened index (under the write lock); the papers as
    written (with their ids). ``sources``: what the index will hold; ``read``: what this command read (the
    journal names these in its advice, so that finishing a kill never re-adds a file's removed papers)."""
    # an earlier write left the store ahead of its last commit: commit even if nothing is new
    dirty = index.manifest is not None and (integrity.meta_get(index, "journal") is not None
                                            or not integrity.consistent(index))
    plan, named, stems, existing = _plan(index, papers, report, history, partial,
                                         read=read if read is not None else sources)
    token = None
    undo = journal.capture(index, plan.touched())
    if not index.remote:
        token = journal.save(index.dir, f"{os.getpid()}-{os.urandom(4).hex()}", plan, undo)
    integrity.meta_write(index, journal={"op": "ingest", "sources": sources, "read": read or sources, "files": stems,
                                         "file": token, "owner": owner(), "embedder": index.embedder_id,
                                         "started": time.time()})
    integrity.crash_point("ingest-journaled")
    written: list[tuple[list[tuple[str, str, int]], np.ndarray]] = []
    try:
        _apply(index, plan, settings, report, progress, written, set(existing))
    except KeyboardInterrupt:
        journal.restore(index, plan, undo)
        if index.manifest is not None:
            index.commit(dict(index.manifest))
        else:
            integrity.meta_write(index, journal=None)
        journal.discard(index.dir, token)
        raise
    integrity.crash_point("ingest-written")
    manifest = index.manifest or index.new_manifest(probe_dim(index))
    manifest["sources"], manifest["files"] = sources, stems
    changed = plan.todo or plan.drop or plan.moved
    if changed or dirty or index.manifest is None or "generation" not in manifest or \
            manifest.get("files") != (index.manifest or {}).get("files"):
        before = integrity.state_tag(index.manifest) if index.manifest else None
        hashes = {pid: h for pid, h in existing.items() if pid not in set(plan.drop)}
        hashes.update((p.id, p.content_hash) for p in plan.todo)
        by_id = {p.id: p for p in named}
        in_hand = [by_id[pid] for pid in hashes if pid in by_id]
        index.commit(manifest, hashes, in_hand if len(in_hand) == len(hashes) else None,
                     _vectors_in_hand(index, before, hashes, {p.id for p in plan.todo} | set(plan.drop), written))
    else:  # nothing changed: record the sources and end the journal
        index.write_manifest(manifest)
    journal.discard(index.dir, token)
    return named


def _plan(index: Index, papers: list[Paper], report: IngestReport, history: tuple | None = None,
          partial: frozenset[str] = frozenset(), read: list[str] | None = None):
    """(the write plan, the papers with their ids, the stem each file numbers under, stored id -> content hash).
    Ids of papers without their own are numbered against what the index holds (text/ids.py); ``history``
    (stored records, stems) stands in for it when building a new index in place of an old one. Nothing is
    written here: a file giving ids another file's papers hold is refused (:func:`_refuse_taken_ids`)."""
    from assistant.text.ids import Stored, assign

    existing: dict[str, str] = {}
    records: dict[str, str] = {}
    stored: list[Stored] = []
    abstracts: dict[str, str] = {}
    for pid, meta in paged(index.papers, ["metadatas"]):
        existing[pid], records[pid] = meta.get("content_hash"), meta.get("paper_json")
        abstracts[pid] = meta.get("abstract") or ""
        stored.append(Stored(pid, meta.get("content_hash") or "", meta.get("origin"), meta.get("source") or "",
                             int(meta.get("position") or 0)))
    if history is not None:
        stored, stems = history
    else:
        stems = dict((index.manifest or {}).get("files") or {})
    named, dropped, stems = assign(papers, stored, stems)
    origins = {s.id: s.origin for s in stored}  # each stored paper's file
    if history is None:  # a rebuild keeps nothing it does not read: no paper of a deleted file stays to be said
        report.gone_files = _gone_from_folders(origins, read or [])
    if history is None:
        _refuse_taken_ids(named, origins)
        named = _without_stored_copies(named, abstracts, origins, report)
    kept = [pid for pid in dropped if origins.get(pid) in partial]
    report.kept_unread += kept
    dropped = [pid for pid in dropped if pid not in set(kept)]
    todo, moved = [], []
    for paper in named:
        if existing.get(paper.id) == paper.content_hash:
            report.unchanged.append(paper.id)
            if records.get(paper.id) != paper_to_meta(paper)["paper_json"]:
                moved.append(paper)  # the same text, another place, file or field: its record only is rewritten
        else:
            (report.updated if paper.id in existing else report.added).append(paper.id)
            todo.append(paper)
    drop = [pid for pid in dropped if pid in existing]
    report.removed += drop
    plan = journal.WritePlan(tuple(todo), tuple(moved), tuple(drop), tuple(report.added))
    return plan, named, stems, existing


def _without_stored_copies(named: list[Paper], abstracts: dict[str, str], origins: dict[str, str | None],
                           report: IngestReport) -> list[Paper]:
    """A new paper whose abstract a paper of another file already has is stored once, as two copies read in one
    ingest are (`load_papers`): left out, and said to be a duplicate of the stored one (``report.duplicates``)."""
    new = [p for p in named if p.id not in abstracts]
    if not new:
        return named
    from assistant.text.corpus import abstract_key

    held: dict[str, str] = {}
    for pid, text in abstracts.items():
        held.setdefault(abstract_key(text), pid)
    copies = {p.id: held[key] for p in new if (key := abstract_key(p.abstract)) in held
              and origins.get(held[key]) != p.origin}
    report.duplicates += list(copies.items())
    return [p for p in named if p.id not in copies]


def _gone_from_folders(origins: dict[str, str | None], read: list[str]) -> list[str]:
    """Stored papers whose file was in a folder this ingest read and is there no longer: a folder read again after a
    file was deleted kept its papers without a word."""
    folders = [Path(r) for r in read if Path(r).is_dir()]
    if not folders:
        return []
    return sorted(pid for pid, origin in origins.items()
                  if origin and not origin.startswith("bundled/") and not Path(origin).exists()
                  and any(f in Path(origin).parents for f in folders))


def _refuse_taken_ids(named: list[Paper], origins: dict[str, str | None]) -> None:
    """A record with an id of its own that a paper from another file already has (two CSV exports both numbering
    their rows 1, 2, 3) would replace that paper: refused, naming both files, before anything is written. A paper
    whose file is gone (moved or renamed) is taken over by the file that gives its id now."""
    from assistant.text.corpus import bundled_corpus

    holder = {pid: origin for pid, origin in origins.items() if origin}

    def still_there(origin: str) -> bool:
        return (bundled_corpus() / origin.removeprefix("bundled/")).is_file() if origin.startswith("bundled/") \
            else Path(origin).is_file()

    taken = [(p, holder[p.id]) for p in named
             if not p.numbered and p.origin and holder.get(p.id) not in (None, p.origin) and still_there(holder[p.id])]
    if taken:
        paper, other = taken[0]
        ids = [p.id for p, o in taken if p.origin == paper.origin and o == other]
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        raise InputError(f"{paper.origin} gives ids that papers from {other} already have ({shown}); nothing was "
                         "changed: give its records ids of their own (or no id column, to have them numbered), "
                         f"or remove those papers first (assistant remove {' '.join(ids[:3])}"
                         f"{' ...' if len(ids) > 3 else ''})")


def _apply(index: Index, plan: journal.WritePlan, settings: Settings, report: IngestReport,
           progress: Progress | None, written: list | None, committed: set[str]) -> None:
    """Carry out a write plan; papers already written as planned (a plan finished after a kill) are skipped."""
    for batch in batches(list(plan.drop), 5000):  # records first: a paper without its record is never retrieved
        index.papers.delete(ids=batch)
        index.chunks.delete(where={"paper_id": {"$in": batch}})
    max_batch = index.client.get_max_batch_size()
    for batch in batches(list(plan.moved), max_batch):
        index.papers.update(ids=[p.id for p in batch], metadatas=[paper_to_meta(p) for p in batch])
    _sweep_orphans(index, committed)
    done: dict[str, str] = {}
    if plan.todo:
        got = index.papers.get(ids=[p.id for p in plan.todo], include=["metadatas"])
        done = {pid: m.get("content_hash") for pid, m in zip(got["ids"], got["metadatas"])}
    todo = [p for p in plan.todo if done.get(p.id) != p.content_hash]
    if todo:
        write_papers(index, todo, settings, report, progress, written)


def finish_pending(index: Index, settings: Settings, progress: Progress | None = None) -> list[str]:
    """Finish a write a kill interrupted, from its journal (call under the write lock): a remove, or an ingest
    whose journal file says what it was writing. What was done, for the user ([] if nothing was pending)."""
    entry = integrity.meta_get(index, "journal")
    if not entry:
        return []
    if entry.get("op") == "remove":
        integrity.complete_remove(index, list(entry.get("ids") or []))
        return [f"finished the interrupted remove of {', '.join(entry.get('ids') or [])}"]
    loaded = journal.load(index.dir, entry.get("file")) if entry.get("op") == "ingest" and not index.remote else None
    if loaded is None:
        return []  # an ingest from before journal files, or in server mode: its re-run finishes it
    plan, _ = loaded
    report = IngestReport()
    committed = {pid for (pid,) in paged(index.papers, [])}
    _apply(index, plan, settings, report, progress, None, committed)
    manifest = index.manifest or meta_manifest(index) or index.new_manifest(probe_dim(index))
    manifest["sources"], manifest["files"] = list(entry.get("sources") or []), dict(entry.get("files") or {})
    index.forget_papers()
    index.commit(manifest)
    journal.discard(index.dir, entry.get("file"))
    return [f"finished the interrupted ingest of {integrity.source_names(integrity.journal_read(entry))} "
            f"({len(plan.todo)} papers to write, {len(plan.drop)} to remove)"]


def meta_manifest(index: Index) -> dict | None:
    """The manifest's copy in the store (a first ingest killed after its commit's Chroma write)."""
    copy = integrity.meta_get(index, "manifest")
    return dict(copy) if isinstance(copy, dict) else None


def recover_aside(index_dir: Path) -> list[str]:
    """Finish or drop an index being built beside this one (aside.py); call under the write lock."""
    from assistant.store import aside

    if not aside.pending(index_dir):
        return []
    said = aside.recover(index_dir)
    return [said] if said else []


def _rebuilt(papers: list[Paper], settings: Settings, progress: Progress | None, sources: list[str],
             report: IngestReport, started: float) -> IngestReport:
    """``ingest --rebuild`` (local): build the new index beside the old one, then swap it in (aside.py). The old
    index's ids are kept for what did not change, and its recorded sources are compared with the new ones."""
    built = build_aside(papers, settings, progress, sources, "an ingest --rebuild")
    report.added, report.updated, report.unchanged, report.removed = (built.added, built.updated, built.unchanged,
                                                                      built.removed)
    report.chunks, report.embed_seconds = built.chunks, built.embed_seconds
    report.dropped_sources = [s for s in built.dropped_sources if s not in sources]
    report.seconds = time.perf_counter() - started
    return report


def build_aside(papers: list[Paper], settings: Settings, progress: Progress | None, sources: list[str],
                what: str) -> IngestReport:
    """Build an index of ``papers`` beside the one at ``settings`` and swap it in (local mode, under the write lock
    of the index). Papers of the old index that did not change keep their ids."""
    from assistant.store import aside

    base = local_dir(settings)
    previous, history, old = _history(settings)
    side = aside.begin(base, what)
    try:
        report = IngestReport()
        fresh = Index(settings.replace(index={**settings.index.model_dump(), "dir": side}), create=True, check=False)
        named = _write(fresh, papers, settings, progress, report, sources, history)
        integrity.crash_point("aside-built")
        del fresh
    except BaseException:
        aside.abandon(base, side)
        raise
    aside.swap(base, side)
    # every paper of the new index was embedded anew: all count as added (as into an emptied index); those of the
    # old index it no longer holds are named
    report.removed = sorted(set(old) - {p.id for p in named})
    report.dropped_sources = previous
    return report


def _history(settings: Settings) -> tuple[list[str], tuple, dict[str, str]]:
    """(the sources, (stored records, stems) and id -> content hash of the index a rebuild replaces); empty when
    it cannot be opened (a rebuild replaces a damaged index too)."""
    from assistant.text.ids import Stored

    try:
        index = Index(settings, create=True, check=False)
        stored = [Stored(pid, m.get("content_hash") or "", m.get("origin"), m.get("source") or "",
                         int(m.get("position") or 0)) for pid, m in paged(index.papers, ["metadatas"])]
        stems = dict((index.manifest or meta_manifest(index) or {}).get("files") or {})
        return integrity.recorded(index), (stored, stems), {s.id: s.content_hash for s in stored}
    except Exception:  # noqa: BLE001 - whatever is wrong with the old index, the rebuild replaces it
        return [], ([], {}), {}


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
        # the abstracts' sentences (quoted by answers, read by the decisions) in the same pass, so that no question
        # pays for embedding them
        sentences = index.sentences_missing([p.abstract for p in group]) if settings.embed.sentences == "ingest" else []
        texts += [s for _, said in sentences for s in said]
        embed_started = time.perf_counter()
        embedded = 0

        def on_batch(n: int) -> None:
            """Move the bar as chunks are embedded, not once per group (a group takes ~30 s)."""
            nonlocal embedded
            embedded += n
            progress(done + len(group) * embedded // max(len(texts), 1), len(todo))

        vecs = embed_array(index.embedder, texts, on_batch=on_batch if progress else None)
        vecs, sentence_vecs = vecs[:len(chunks)], vecs[len(chunks):]
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
        index.store_sentences(sentences, sentence_vecs)  # a cache: never part of what is committed
        integrity.crash_point("ingest-group")
        if written is not None:  # kept for the commit's chunk-vector matrix
            written.append(([(c.id, c.paper_id, c.number) for c in chunks], vecs))
        if index.heartbeat is not None:  # server mode: keep the server's ingest lock from expiring
            index.heartbeat()
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
            faults.check_space(local_dir(settings))
            recover_aside(local_dir(settings))
        index = open_for_write(settings, held, rebuild=False, create=False)
        finish_pending(index, settings)
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


def recover(settings: Settings, progress: Progress | None = None, wait: bool = True) -> list[str]:
    """Finish or undo, under the write lock, whatever write a kill interrupted (a rebuild beside the index, an
    ingest or a remove); what was done, for the user. ``wait``: False to give up at once when the lock is held."""
    with write_lock(local_dir(settings), wait), contextlib.ExitStack() as held:
        said = [] if settings.index.chroma_url else recover_aside(local_dir(settings))
        try:
            index = open_for_write(settings, held, rebuild=False, create=False)
        except integrity.NoIndex:
            return said
        return said + finish_pending(index, settings, progress)


def open_for_write(settings, held: contextlib.ExitStack, rebuild: bool, create: bool = True):
    """Open the index for a writer that holds the local lock; in server mode take the server's lock too
    (clients with different local directories share one server)."""
    index = Index(settings, create=create, check=False)
    if index.remote:
        index.heartbeat = held.enter_context(server_lock(index.client, index.remote))
    return index


def emptied(index: Index, settings: Settings, sources: list[str]) -> Index:
    """Server mode's ``ingest --rebuild``: the collections emptied under a journal that names the sources to re-read,
    so that an interrupted rebuild is named with the command that finishes it, never forgotten."""
    integrity.meta_write(index, journal={"op": "ingest", "rebuild": True, "sources": sources, "owner": owner(),
                                         "embedder": index.embedder_id, "started": time.time()})
    for name in (CHUNKS, PAPERS):
        with contextlib.suppress(Exception):  # already gone
            index.client.delete_collection(name)
    fresh = Index(settings, create=True, check=False)
    fresh.heartbeat = index.heartbeat
    fresh.manifest = None  # a new manifest: the rebuild may change the embedder or the chunking
    return fresh


def rebuild_sources(settings) -> list[Path] | None:
    """The paths ``ingest --rebuild`` (no paths) re-reads: the sources the index records. None means the
    bundled corpus, allowed only when that is what the index holds or the index holds nothing."""
    from assistant.text.corpus import bundled_corpus
    from assistant.errors import InputError

    if not settings.index.chroma_url and integrity.holds_nothing(local_dir(settings)):
        return None
    if not settings.index.chroma_url and (local_dir(settings) / ASIDE).exists():
        recover(settings)  # a rebuild a kill interrupted: the index it left is the one whose sources count
    try:
        index = Index(settings, create=True, check=False)
    except IndexStoreError:
        index = None
    if index is not None:
        integrity.check_manifest_copy(index)  # a damaged manifest.json must not decide what replaces the papers
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

