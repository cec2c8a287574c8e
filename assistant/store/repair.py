"""``doctor``'s index checks and ``doctor --repair``: consistency of the Chroma store, its journal, the
manifest and the derived files (see integrity.py for the invariants they check)."""

from __future__ import annotations

import contextlib
import json

from assistant.store import integrity
from assistant.config import Settings
from assistant.errors import IndexStoreError
from assistant.store.layout import BM25, VECTORS


def _derived_status(index) -> dict[str, str]:
    """Each derived file: ok, missing, stale (built from another committed state) or damaged (checksum)."""
    import numpy as np

    from assistant.store.files import files_crc, matrix_crc
    from assistant.store.lexical import BM25_VERSION
    from assistant.store.vectors import VECTORS_VERSION

    out = {}
    tag = index.state_tag
    for name, version in ((BM25, BM25_VERSION), (VECTORS, VECTORS_VERSION)):
        path = index.dir / name
        try:
            meta = json.loads((path / "ids.json").read_text())
        except (OSError, ValueError):
            out[name] = "missing"
            continue
        if meta.get("state") != tag or meta.get("version") != version:
            out[name] = "stale (built from another state of the store)"
            continue
        try:
            crc = files_crc(path) if name == BM25 else matrix_crc(np.load(path / "matrix.npy"))
        except (OSError, ValueError, EOFError):
            crc = None
        out[name] = "ok" if crc == meta.get("crc") else "damaged (checksum mismatch)"
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
    m, problems = index.manifest, []
    state, journal = integrity.meta_get(index, "state"), integrity.meta_get(index, "journal")
    if index.manifest_error is not None:
        problems.append(str(index.manifest_error))
    elif m is None:
        problems.append("no manifest.json")
    if journal and not integrity.writer_active(index):
        problems.append(f"an interrupted {journal.get('op')} of "
                        + (", ".join(journal.get("ids") or []) if journal.get("op") == "remove"
                           else integrity.source_names(journal.get("sources"))))
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
    problems += [f"{name} {status}" for name, status in derived.items() if status != "ok"]
    fix = "assistant doctor --repair"
    if journal and journal.get("op") == "ingest" and not integrity.writer_active(index):
        fix = f"{integrity.ingest_command(journal.get('sources'))} (finishes it) or assistant doctor --repair " \
              "(keeps what it stored)"
    if m is not None and now["papers"] == 0 and m.get("papers"):  # nothing left to repair from
        problems.insert(0, "the Chroma store is empty (chroma/ deleted or emptied?)")
        fix = integrity.rebuild_advice(m)
    return {"papers": now["papers"], "chunks": now["chunks"], "manifest": m, "derived": derived, "fix": fix,
            "generation": (state or {}).get("generation"), "problems": problems, "dir": str(index.dir)}


def repair(settings: Settings) -> tuple[list[str], list[str]]:
    """Mend what can be mended; (what was done, what could not be mended and how to fix it)."""
    from assistant.config import local_dir
    from assistant.store.ingest import write_lock

    actions: list[str] = []
    with write_lock(local_dir(settings)), contextlib.ExitStack() as held:
        from assistant.store.ingest import open_for_write

        index = open_for_write(settings, held, rebuild=False, create=False)
        journal = integrity.meta_get(index, "journal")
        _mend_manifest(index, journal, actions)
        index.check_manifest(index.manifest)
        now = integrity.live(index)
        if now["papers"] == 0 and index.manifest.get("papers"):
            return actions, [f"the Chroma store is empty but its manifest lists {index.manifest['papers']} papers: "
                             f"re-ingest with: {integrity.rebuild_advice(index.manifest)}"]
        if journal and journal.get("op") == "remove":
            integrity.complete_remove(index, list(journal.get("ids") or []))
            actions.append(f"finished the interrupted remove of {', '.join(journal.get('ids') or [])}")
        elif journal and journal.get("op") == "ingest":
            index.manifest["sources"] = integrity.recorded(index)
            actions.append(f"kept the {now['papers']} papers stored by the interrupted ingest of "
                           f"{integrity.source_names(journal.get('sources'))}; add the rest with: "
                           f"{integrity.ingest_command(journal.get('sources'))}")
        _mend_vectors(index, settings, actions)
        index._papers_cache = None
        index.commit(index.manifest)
        actions.append(f"rebuilt BM25 and the chunk-vector matrix; recorded the state ({index.manifest['papers']} "
                       f"papers, {index.manifest['chunks']} chunks)")
    return actions, []


def _mend_manifest(index, journal: dict | None, actions: list[str]) -> None:
    if index.manifest is not None:
        return
    copy = integrity.meta_get(index, "manifest")
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


def _mend_vectors(index, settings: Settings, actions: list[str]) -> None:
    """Lost vector segments: re-embed every stored abstract. Orphan chunks: drop. Papers without chunks:
    re-embed them. The abstracts are in the records' metadata, which survives lost segments."""
    from assistant.store.index import CHUNKS, PAPERS
    from assistant.store.ingest import IngestReport, batches, write_papers

    try:
        integrity.probe_vectors(index)
    except IndexStoreError:
        papers = list(index.all_papers().values())
        for name in (CHUNKS, PAPERS):
            index.client.delete_collection(name)
        index._open_collections()
        write_papers(index, papers, settings, IngestReport(), None)
        actions.append(f"re-embedded the {len(papers)} stored abstracts (their vectors were unreadable)")
        return
    _, orphans, chunkless = _membership(index)
    for batch in batches(orphans, 5000):
        index.chunks.delete(ids=batch)
    if orphans:
        actions.append(f"dropped {len(orphans)} orphan chunks")
    if chunkless:
        stored = index.all_papers()
        write_papers(index, [stored[pid] for pid in sorted(chunkless) if pid in stored], settings, IngestReport(), None)
        actions.append(f"re-embedded {len(chunkless)} papers that had lost their chunks")
