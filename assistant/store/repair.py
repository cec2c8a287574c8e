"""``doctor``'s index checks and ``doctor --repair``: consistency of the Chroma store, its journal, the
manifest and the derived files (see integrity.py for the invariants they check)."""

from __future__ import annotations

import contextlib

from assistant.store import integrity
from assistant.config import Settings
from assistant.errors import IndexStoreError
from assistant.store.layout import ASIDE, BM25, VECTORS
from assistant.store.records import paged


def _derived_status(index) -> dict[str, str]:
    """Each derived file: ok, missing, stale (built from another committed state) or damaged (checksum)."""
    from assistant.store.layout import SNAPSHOT

    out = {BM25: index.bm25_status(), SNAPSHOT: index.snapshot_status()}
    if not index.at_scale:  # searched through HNSW at scale: no chunk-vector matrix is kept
        out[VECTORS] = index.vectors_status()
    return out


def _membership(index) -> tuple[set[str], list[str], set[str]]:
    """(paper ids, ids of chunks whose paper has no record, ids of papers without chunks)."""
    from assistant.store.records import paged

    papers = {pid for (pid,) in paged(index.papers, [])}
    orphans, owners = [], set()
    for cid, meta in paged(index.chunks, ["metadatas"]):
        owner = (meta or {}).get("paper_id")
        owners.add(owner)
        if owner not in papers:
            orphans.append(cid)
    return papers, orphans, papers - owners


def inspect(settings: Settings) -> dict:
    """Counts per collection and every inconsistency found (no changes made)."""
    from assistant.store.index import Index

    index = Index(settings, check=False)
    now = integrity.live(index)
    if integrity.nothing_committed(index, now):
        raise integrity.NoIndex(integrity.FIRST_BUILD_CUT.format(where=index.dir))
    m, problems = index.manifest, []
    state, journal = integrity.meta_get(index, "state"), integrity.meta_get(index, "journal")
    if index.manifest_error is not None:
        problems.append(str(index.manifest_error))
    elif m is None:
        problems.append("no manifest.json")
    if not index.remote and (index.dir / ASIDE).exists() and not integrity.writer_active(index):
        problems.append("an interrupted ingest --rebuild or re-embedding (the next command finishes or drops it)")
    if m is not None and not integrity.copy_matches(index):
        problems.append(integrity.manifest_differs(index).split("; restore")[0])
    if journal and not integrity.writer_active(index):
        problems.append(f"an interrupted {journal.get('op')} of "
                        + (", ".join(journal.get("ids") or []) if journal.get("op") == "remove"
                           else integrity.source_names(integrity.journal_read(journal))))
    if m is not None:
        if m.get("papers") != now["papers"]:
            problems.append(f"the manifest lists {m.get('papers')} papers, the store holds {now['papers']}")
        if state is not None and state != integrity.state_of(m):
            problems.append("manifest.json does not describe the state the Chroma store recorded")
        if state is not None and state.get("chunks") != now["chunks"]:
            problems.append(f"the last commit recorded {state.get('chunks')} chunks, the store holds {now['chunks']}")
    _, orphans, chunkless = _membership(index)
    if orphans:
        problems.append(f"{len(orphans)} orphan chunks (their paper has no record)")
    if chunkless:
        problems.append(f"{len(chunkless)} papers without chunks")
    try:
        integrity.probe_vectors(index)
    except IndexStoreError as exc:
        problems.append(str(exc).split(";")[0])
    derived = _derived_status(index) if m is not None else {}
    # a server's client keeps its own caches, built by its first search after any client's commit: only damage
    # is a problem there
    problems += [f"{name} {status}" for name, status in derived.items()
                 if status != "ok" and not (index.remote and status.split()[0] in ("stale", "missing"))]
    fix = "assistant doctor --repair"
    if journal and journal.get("op") == "ingest" and not integrity.writer_active(index):
        fix = (f"{integrity.ingest_command(integrity.journal_read(journal))} or assistant doctor --repair "
               "(either finishes it)")
    if m is not None and now["papers"] == 0 and m.get("papers"):  # nothing left to repair from
        problems.insert(0, "the Chroma store is empty (chroma/ deleted or emptied?)")
        fix = integrity.rebuild_advice(m)
    return {"papers": now["papers"], "chunks": now["chunks"], "manifest": m, "derived": derived, "fix": fix,
            "generation": (state or {}).get("generation"), "problems": problems, "dir": str(index.dir)}


def repair(settings: Settings) -> tuple[list[str], list[str]]:
    """Mend what can be mended; (what was done, what could not be mended and how to fix it). A repair never
    leaves fewer papers than the last commit recorded and calls it repaired: papers the store lost are
    re-embedded from an intact papers.json, or the repair says it could not mend them."""
    from assistant.config import local_dir
    from assistant.store.ingest import finish_pending, open_for_write, recover_aside, write_lock

    with write_lock(local_dir(settings)), contextlib.ExitStack() as held:
        actions = [] if settings.index.chroma_url else recover_aside(local_dir(settings))
        index = open_for_write(settings, held, rebuild=False, create=False)
        actions += finish_pending(index, settings)
        if integrity.nothing_committed(index):  # a manifest of 0 papers would make it "ok" and empty
            return actions, [integrity.FIRST_BUILD_CUT.format(where=index.dir)]
        journal = integrity.meta_get(index, "journal")
        _mend_manifest(index, journal, actions)
        index.check_manifest(index.manifest)
        expected = int(index.manifest.get("papers") or 0)
        if journal and journal.get("op") == "remove":
            integrity.complete_remove(index, list(journal.get("ids") or []))
            actions.append(f"finished the interrupted remove of {', '.join(journal.get('ids') or [])}")
            expected = index.count()
        elif journal and journal.get("op") == "ingest":
            index.manifest["sources"] = integrity.recorded(index)
            actions.append(f"kept the {index.count()} papers stored by the interrupted ingest of "
                           f"{integrity.source_names(integrity.journal_read(journal))}; add the rest with: "
                           f"{integrity.ingest_command(integrity.journal_read(journal))}")
            expected = index.count()
        index = _mend_vectors(index, settings, actions)
        _mend_missing(index, settings, expected, actions)
        if index.count() < expected:  # never recorded as repaired: the last commit's count stands
            return actions, [f"the store holds {index.count()} of the {expected} papers its last commit recorded, and "
                             "no intact papers.json holds the rest: re-ingest with: "
                             f"{integrity.rebuild_advice(index.manifest)}"]
        index.forget_papers()
        index.commit(index.manifest)
        unrepaired = _verify(index)
        if not unrepaired:
            actions.append(f"rebuilt BM25 and the chunk-vector matrix; recorded the state ({index.manifest['papers']} "
                           f"papers, {index.manifest['chunks']} chunks)")
    return actions, unrepaired


def _verify(index) -> list[str]:
    """What is still wrong after a repair: a derived file that could not be written or does not check out."""
    wrong = []
    for name, why in index.derived_errors.items():
        wrong.append(f"could not write {index.dir / name} ({why}); move it aside or fix its permissions, then run "
                     "assistant doctor --repair again")
    if not wrong:
        for name, status in _derived_status(index).items():
            if status != "ok":
                wrong.append(f"{index.dir / name} is {status} after the repair; move it aside and run assistant "
                             "doctor --repair again")
    return wrong


def _mend_manifest(index, journal: dict | None, actions: list[str]) -> None:
    copy = integrity.meta_get(index, "manifest")
    if index.manifest is not None and not integrity.copy_matches(index):
        index.manifest = dict(copy)
        actions.append("restored manifest.json from its copy in the Chroma store (it differed: edited or damaged)")
        return
    if index.manifest is not None:
        return
    if copy:
        index.manifest = copy
        actions.append("restored manifest.json from its copy in the Chroma store")
        return
    from assistant.store.ingest import probe_dim

    index.manifest = index.new_manifest(probe_dim(index))
    sources = list((journal or {}).get("sources") or [])
    index.manifest["sources"] = sources
    if journal and journal.get("embedder"):  # the interrupted ingest recorded what it embedded with
        index.manifest["embedder"] = journal["embedder"]
        actions.append(f"wrote a manifest.json for the {index.count()} papers the interrupted ingest stored")
    else:
        actions.append(f"wrote a new manifest.json for the {index.count()} stored papers (embedder assumed: the "
                       f"configured {index.embedder_id}; the files they came from are not recorded)")


def _mend_vectors(index, settings: Settings, actions: list[str]):
    """Lost vector segments: re-embed every stored abstract into a new index beside this one and swap it in
    (aside.py: a kill leaves the old one). Orphan chunks: drop. Papers without chunks: re-embed them. The abstracts
    are in the records' metadata, which survives lost segments. Returns the index to go on with."""
    from assistant.store.index import Index
    from assistant.store.ingest import IngestReport, build_aside, write_papers
    from assistant.store.records import batches

    try:
        integrity.probe_vectors(index)
    except IndexStoreError:
        papers = list(index.all_papers().values())
        if index.remote:  # no room beside a server's collections: re-embedded in place, under the server lock
            from assistant.store.index import CHUNKS, PAPERS

            for name in (CHUNKS, PAPERS):
                index.client.delete_collection(name)
            index.open_collections()
            write_papers(index, papers, settings, IngestReport(), None)
        else:
            manifest = index.manifest
            build_aside(papers, settings, None, list(manifest.get("sources") or []), "a re-embedding by doctor --repair")
            index = Index(settings, check=False)
            index.manifest.update({k: manifest[k] for k in ("sources", "files") if k in manifest})
        actions.append(f"re-embedded the {len(papers)} stored abstracts (their vectors were unreadable)")
        return index
    _, orphans, chunkless = _membership(index)
    for batch in batches(orphans, 5000):
        index.chunks.delete(ids=batch)
    if orphans:
        actions.append(f"dropped {len(orphans)} orphan chunks")
    if chunkless:
        stored = index.all_papers()
        write_papers(index, [stored[pid] for pid in sorted(chunkless) if pid in stored], settings, IngestReport(), None)
        actions.append(f"re-embedded {len(chunkless)} papers that had lost their chunks")
    return index


def _mend_missing(index, settings: Settings, expected: int, actions: list[str]) -> None:
    """Papers the last commit recorded that the store lost: re-embedded from papers.json when it is intact for
    that commit (its checksum and the commit's fingerprint hold)."""
    from assistant.store.index import read_snapshot
    from assistant.store.ingest import IngestReport, write_papers
    from assistant.store.chunks import paper_from_dict
    from assistant.store.layout import SNAPSHOT

    if index.remote or index.count() >= expected or not (index.manifest or {}).get("fingerprint"):
        return
    snapshot = read_snapshot(index.dir / SNAPSHOT, index.manifest["fingerprint"])
    if snapshot is None:
        return
    have = {pid for (pid,) in paged(index.papers, [])}
    lost = [p for p in snapshot.get("parsed") or [paper_from_dict(d) for d in snapshot["papers"]] if p.id not in have]
    if lost:
        write_papers(index, lost, settings, IngestReport(), None)
        actions.append(f"re-embedded {len(lost)} papers the store had lost, from papers.json (intact for the last "
                       "commit)")
