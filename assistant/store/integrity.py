"""Index integrity: what a read may trust, what a write leaves behind, and how damage is named.

The invariants (docs/index-integrity.md has the fault table and the tests):

1. The bundled corpus is built only into an index directory that holds nothing (:func:`holds_nothing`).
2. No advice deletes what a user ingested without naming it: the manifest records every ingest's
   sources, so ``ingest --rebuild`` re-reads them (:func:`rebuild_advice`).
3. Chroma's meta collection holds the *state* of the store (paper-set fingerprint, paper and chunk
   counts, a generation counter), written in the same Chroma write that ends an ingest or remove.
   Every derived file (BM25, chunk-vector matrix) is tagged with that state and a checksum of its
   bytes; on open the live counts are checked against the state (:func:`check_open`).
4. A write records a *journal* in the meta collection before its first change; the commit clears it.
   A journal with no writer holding the lock is an interrupted write: a remove is finished by the
   next command, an ingest is named with the command that finishes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from assistant.errors import IndexStoreError
from assistant.store.faults import (BUNDLED, disk_full, disk_full_error, ingest_command, rebuild_advice,
                                    source_names)
from assistant.store.server_lock import server_lock, server_lock_holder
from assistant.store.layout import BM25, CHATS, CHROMA, CHROMA_FILE, LOCK, PLACEHOLDER, SENTENCES, SNAPSHOT, VECTORS

META = "assistant_meta"
#: Files a directory may hold and still count as holding no index (caches, the lock file, the clone's placeholder).
IGNORABLE = {LOCK, CHATS, SENTENCES, PLACEHOLDER}
NOT_AN_INDEX = ("{where} is not empty but holds no index (no manifest.json, no papers); build one with: assistant "
                "ingest [PATHS], or point ASSISTANT_INDEX_DIR at an empty directory")


FIRST_BUILD_CUT = ("no index at {where} (its store holds nothing: a first build was cut off); build one with: "
                   "assistant ingest [PATHS] (the default index directory is built from the bundled corpus by the next "
                   "command)")


class NoIndex(IndexStoreError):
    """The index directory holds nothing (``resume_bundled``: only an interrupted build of the bundled
    corpus, which the first read may finish)."""

    def __init__(self, message: str, resume_bundled: bool = False):
        super().__init__(message)
        self.resume_bundled = resume_bundled


def nothing_committed(index, now: dict | None = None) -> bool:
    """Whether a local index directory never saw a commit: no manifest, no papers.json, no journal, and a store of no
    papers. A first build cut off before its first commit (Ctrl-C during the first `ask`) leaves that: an empty
    store and its lock. It is no index, as an empty directory is, and the default one is built on first use (it was
    stuck: "not empty but holds no index", and doctor --repair made it an index of 0 papers)."""
    return not index.remote and index.manifest is None and index.manifest_error is None \
        and not (index.dir / SNAPSHOT).exists() and (now or live(index))["papers"] == 0 \
        and meta_get(index, "journal") is None


def holds_nothing(path: Path) -> bool:
    """True when ``path`` is missing or holds only caches, a lock file and empty folders."""
    if not path.exists():
        return True
    if not path.is_dir():
        return False
    for entry in path.iterdir():
        if entry.name in IGNORABLE or entry.name.startswith("server-"):  # server mode's local caches
            continue
        if entry.is_dir() and not any(p.is_file() for p in entry.rglob("*")):
            continue
        return False
    return True


# --- the meta collection -------------------------------------------------------------------


def meta_read(index) -> dict:
    """The meta collection's metadata, read afresh (a collection object caches what it was opened with)."""
    try:
        return dict(index.client.get_collection(META).metadata or {})
    except Exception:  # no meta collection: an index from before it existed, or an emptied store
        return {}


def meta_get(index, key: str):
    raw = meta_read(index).get(key)
    try:
        return json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def meta_write(index, **items) -> None:
    """Set (or, with None, delete) keys of the meta collection in one Chroma write."""
    meta = meta_read(index)
    for key, value in items.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = json.dumps(value)
    meta["layout"] = "1"  # Chroma refuses an empty metadata dict
    col = index.client.get_or_create_collection(META, embedding_function=None)
    col.modify(metadata=meta)
    index.meta = col


def state_of(manifest: dict | None) -> dict:
    m = manifest or {}
    return {k: m.get(k) for k in ("fingerprint", "papers", "chunks", "generation")}


def state_tag(manifest: dict | None) -> str:
    """What a derived file records of the state it was built from."""
    s = state_of(manifest)
    return f"{s['fingerprint']}:{s['papers']}:{s['chunks']}:{s['generation']}"


def live(index) -> dict:
    return {"papers": index.papers.count(), "chunks": index.chunks.count()}


# --- the local store read directly, without chromadb ---------------------------------------

#: Collections whose records the direct check counts (the index's PAPERS and CHUNKS).
COUNTED = ("papers", "chunks")


def read_directly(index) -> dict | None:
    """The local store's counts, log positions and meta record, read without chromadb (chroma_file.read_store)."""
    from assistant.store.chroma_file import read_store

    return read_store(index.dir / CHROMA / CHROMA_FILE, COUNTED, META)


def store_seq(index) -> dict | None:
    """Each counted collection's log position, recorded by a commit (the manifest's ``seq``): a later write to the
    store moves it. None in server mode or when the store cannot be read directly."""
    if index.remote:
        return None
    found = read_directly(index)
    return found["seq"] if found else None


def verified_directly(index) -> bool:
    """:func:`check_open`'s checks on a local store, without chromadb: no journal, the recorded state equal to the
    manifest's, the live counts equal to the state's, and, when the manifest records the store's log position
    (``seq``), the store not written since that commit. True: the index is as its last commit left it. False: let
    chromadb decide (damage, a write under way or interrupted, an index from before the state record, another
    Chroma version, a read-only directory, whose message chromadb's path gives). A store written since the commit
    at the same counts (a record replaced behind the manifest's back) also sets ``index.store_moved``: its
    papers are then read from the store, not from the snapshot of the commit."""
    m = index.manifest
    if index.remote or m is None or index.manifest_error is not None or not os.access(index.dir, os.W_OK):
        return False
    store = read_directly(index)
    if store is None or "journal" in store["meta"]:
        return False
    try:
        state = json.loads(store["meta"].get("state") or "null")
    except (TypeError, ValueError):
        return False
    if not isinstance(state, dict) or state != state_of(m) or \
            {name: store[name] for name in COUNTED} != {name: state[name] for name in COUNTED}:
        return False
    if _copy_of(store["meta"]) != m:  # manifest.json edited or damaged since its commit: chromadb's path names it
        return False
    if m.get("seq") is not None and m["seq"] != store["seq"]:
        index.store_moved = True
        return False
    index.verified_counts = {name: store[name] for name in COUNTED}
    return True


# --- who is writing ---------------------------------------------------------------------


def writer_active(index) -> bool:
    """Whether another process holds the ingest lock right now."""
    if index.remote:
        return server_lock_holder(index.client) is not None
    import fcntl

    path = index.dir / LOCK
    try:
        fh = open(path)
    except OSError:
        return False
    with fh:
        try:  # a shared probe: it conflicts with a writer's exclusive lock only
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


def read_failure(index, exc: BaseException) -> IndexStoreError:
    """A Chroma read that kept failing: an ingest under way, a full disk, or damage."""
    if index is None or writer_active(index):
        return IndexStoreError(f"the index is changing under an ingest ({exc}); try again when the ingest has finished")
    if not index.remote and disk_full(index.dir):
        return disk_full_error(index.dir)
    return IndexStoreError(f"the Chroma store in {index.remote or index.dir} is damaged ({exc}); repair it with: "
                           "assistant doctor --repair (re-embeds the stored abstracts if their vectors are lost)")


# --- checks on open -------------------------------------------------------------------------


def consistent(index) -> bool:
    """Live counts agree with the recorded state, and the manifest with the state and with its copy."""
    m = index.manifest
    meta = meta_read(index)
    state = _loaded(meta.get("state"))
    now = live(index)
    if state is None:  # an index from before the state record: the manifest's paper count is all there is
        return m.get("generation") is None and now["papers"] == m.get("papers", now["papers"])
    return (state == state_of(m) and now["papers"] == state["papers"]
            and now["chunks"] == state["chunks"] and copy_matches(index, meta))


def _loaded(raw):
    try:
        return json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def _copy_of(meta: dict):
    """The manifest's copy that the last commit wrote into the store's meta record (None if there is none)."""
    return _loaded(meta.get("manifest"))


def copy_matches(index, meta: dict | None = None) -> bool:
    """manifest.json is what the last commit wrote (its copy in the store), field for field: an edited or damaged
    one (its sources, say) must not decide a rebuild. Server mode keeps only the copy; an index from before the
    copy passes."""
    if index.remote or index.manifest is None:
        return True
    copy = _copy_of(meta if meta is not None else meta_read(index))
    return copy is None or copy == index.manifest


def check_manifest_copy(index) -> None:
    """Refuse to act on a manifest.json that differs from the copy its commit wrote into the store."""
    if not copy_matches(index):
        raise IndexStoreError(manifest_differs(index))


def manifest_differs(index) -> str:
    copy = _copy_of(meta_read(index)) or {}
    fields = sorted(k for k in set(copy) | set(index.manifest or {}) if copy.get(k) != (index.manifest or {}).get(k))
    return (f"{index.dir / 'manifest.json'} differs from the copy its last commit wrote into the store ({', '.join(fields)}: "
            "edited or damaged?); restore it with: assistant doctor --repair")


def check_open(index) -> None:
    """Raise one clear error when what a read would see is not what the last write committed. A healthy local
    store is checked without chromadb (:func:`verified_directly`); anything else through it."""
    if verified_directly(index):
        return
    if not index.remote and index.manifest is None and index.manifest_error is None and \
            not (index.dir / CHROMA / CHROMA_FILE).exists():
        # no store to ask: say so without opening chromadb, which would create one and leave it behind
        raise IndexStoreError(NOT_AN_INDEX.format(where=index.dir))
    journal = None
    for attempt in range(2):
        journal = meta_get(index, "journal")
        if journal is None and index.manifest_error is None and index.manifest is not None and consistent(index):
            return
        if writer_active(index):
            if index.manifest is None and index.manifest_error is None:
                raise IndexStoreError(f"the index in {index.remote or index.dir} is being built by an ingest; "
                                      "try again when it has finished")
            return  # readers see only papers whose records are committed
        if journal and journal.get("op") == "remove" and index.manifest is not None:
            finish_remove(index)
            continue
        if journal is None and finish_commit(index):
            continue
        if attempt == 0:
            time.sleep(0.3)  # a write may have committed between our reads
    raise damage(index, journal)


def journal_read(journal: dict) -> list[str]:
    """The files an interrupted ingest was reading (its advice names these; ``sources`` is all the index holds)."""
    return list(journal.get("read") or journal.get("sources") or [])


def damage(index, journal: dict | None) -> IndexStoreError:
    """What is wrong with an index that failed :func:`check_open`, and the command that fixes it."""
    where = index.remote or index.dir
    now = live(index)
    m = index.manifest
    if journal and journal.get("op") == "ingest":
        sources = journal_read(journal)
        if journal.get("rebuild"):
            return IndexStoreError(f"an ingest --rebuild of {source_names(sources)} into {where} was interrupted "
                                   f"({now['papers']} papers in the store so far); finish it with: "
                                   "assistant ingest --rebuild")
        if m is None and sources == [BUNDLED]:
            return NoIndex(f"the build of the bundled corpus in {where} was interrupted", resume_bundled=True)
        return IndexStoreError(f"an ingest of {source_names(sources)} into {where} was interrupted ({now['papers']} "
                               f"papers in the store so far); finish it with: {ingest_command(sources)} "
                               "(or: assistant doctor --repair)")
    if index.manifest_error is not None:
        return IndexStoreError(f"{index.manifest_error}; the {now['papers']} papers in the Chroma store are intact: "
                               "restore the manifest with: assistant doctor --repair")
    if m is None:
        if nothing_committed(index, now):
            return NoIndex(FIRST_BUILD_CUT.format(where=where))
        if now["papers"] == 0:
            return IndexStoreError(NOT_AN_INDEX.format(where=where))
        return IndexStoreError(f"{where} holds {now['papers']} papers but no manifest.json (deleted?); restore it "
                               "with: assistant doctor --repair")
    if now["papers"] == 0 and m.get("papers"):
        return IndexStoreError(f"the Chroma store in {where} is empty but its manifest lists {m['papers']} papers "
                               f"(chroma/ deleted or emptied?); re-ingest with: {rebuild_advice(m)}")
    state = meta_get(index, "state") or {}
    if state == state_of(m) and now["papers"] == state.get("papers") and now["chunks"] == state.get("chunks") \
            and not copy_matches(index):
        return IndexStoreError(manifest_differs(index))
    return IndexStoreError(f"the index in {where} is inconsistent (manifest: {m.get('papers')} papers; store: "
                           f"{now['papers']} papers, {now['chunks']} chunks; last commit: {state.get('papers')} papers, "
                           f"{state.get('chunks')} chunks); repair it with: assistant doctor --repair")


def finish_commit(index) -> bool:
    """A commit killed between its Chroma write and manifest.json: the store and the manifest's copy in
    Chroma agree with each other and with the live counts, manifest.json is a generation behind (or, after
    a first ingest, missing while no derived file was built from the copy's state). Finish it by writing
    manifest.json from the copy (derived files follow their new tag)."""
    if index.remote or index.manifest_error is not None:
        return False
    state, copy = meta_get(index, "state"), meta_get(index, "manifest")
    if not state or not copy or state_of(copy) != state or live(index) != {"papers": state["papers"],
                                                                          "chunks": state["chunks"]}:
        return False
    if index.manifest is None and built_from(index, state_tag(copy)):
        return False  # the commit went on past manifest.json (its BM25 is there): manifest.json was deleted since
    if ((index.manifest or {}).get("generation") or 0) >= (state.get("generation") or 0):
        return False
    index.check_manifest(copy)
    with try_lock(index) as got:
        if got:
            index.write_manifest(copy)
        return got


def built_from(index, tag: str) -> bool:
    """Whether a derived file (BM25, the chunk-vector matrix) records committed state ``tag``: a commit writes
    them after manifest.json."""
    for name in (BM25, VECTORS):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if json.loads((index.dir / name / "ids.json").read_text()).get("state") == tag:
                return True
    return False


@contextlib.contextmanager
def try_lock(index):
    """The write lock if it is free at once (yields False when another process holds it)."""
    import fcntl

    if index.remote:
        with contextlib.ExitStack() as stack:
            try:
                index.heartbeat = stack.enter_context(server_lock(index.client, index.remote))
            except IndexStoreError:
                yield False
                return
            yield True
        return
    try:
        fh = open(index.dir / LOCK, "a")
    except OSError:
        yield False
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def finish_remove(index) -> bool:
    """Complete a remove that a crash interrupted (False when another process holds the lock)."""
    with try_lock(index) as got:
        if not got:
            return False
        journal = meta_get(index, "journal")
        if journal and journal.get("op") == "remove":
            complete_remove(index, list(journal.get("ids") or []))
        return True


def complete_remove(index, ids: list[str]) -> None:
    """Records first (a paper without its record is never retrieved), then chunks; the commit clears the
    journal. Every step is idempotent, so a crash anywhere is finished by running this again."""
    if ids:
        index.papers.delete(ids=ids)
        crash_point("remove-records")
        index.chunks.delete(where={"paper_id": {"$in": ids}})
        crash_point("remove-chunks")
    index.commit(dict(index.manifest))


# --- writers -----------------------------------------------------------------------------


_crash_seen: dict[str, int] = {}


def crash_point(name: str) -> None:
    """Tests kill the process here to prove each step is recoverable. ASSISTANT_TEST_CRASH is ``name`` (kill
    at its first occurrence), ``name@N`` (at its Nth: say, the third group of an ingest) or ``name+S`` (at
    its first occurrence start a timer that kills the process S seconds later, wherever it then is: inside a
    Chroma write, the embedder, the commit)."""
    spec = os.environ.get("ASSISTANT_TEST_CRASH")
    if not spec or not spec.startswith(name) or spec[len(name):len(name) + 1] not in ("", "@", "+"):
        return
    import signal

    rest = spec[len(name):]
    _crash_seen[name] = _crash_seen.get(name, 0) + 1
    if rest.startswith("+"):
        if _crash_seen[name] == 1:
            import threading

            timer = threading.Timer(float(rest[1:]), os.kill, (os.getpid(), signal.SIGKILL))
            timer.daemon = True  # a write that ends first exits normally
            timer.start()
        return
    if _crash_seen[name] == (int(rest[1:]) if rest else 1):
        os.kill(os.getpid(), signal.SIGKILL)


def recorded(index) -> list[str]:
    """Sources the index records, plus those of an interrupted ingest whose papers it keeps."""
    if index is None:
        return []
    m = index.manifest or meta_get(index, "manifest") or {}
    journal = meta_get(index, "journal") or {}
    if journal.get("rebuild"):  # an interrupted rebuild: what it was rebuilding from
        return list(journal.get("sources") or [])
    return list(dict.fromkeys(list(m.get("sources") or []) + list(journal.get("sources") or [])))


def probe_vectors(index) -> None:
    """Read one stored vector per collection: lost segment files fail here, not in the middle of a write."""
    for col in (index.papers, index.chunks):
        if col.count():
            try:
                col.get(limit=1, include=["embeddings"])
            except Exception as exc:
                if type(exc).__module__.split(".")[0] != "chromadb":
                    raise
                raise IndexStoreError(f"the Chroma store in {index.remote or index.dir} has lost vectors ({exc}); "
                                      "repair it with: assistant doctor --repair (re-embeds the stored abstracts)") from None


def ready_for_ingest(index) -> None:
    """Refuse to write into an index whose manifest is lost (an ingest would replace its record of the
    user's sources); finish an interrupted remove; check the stored vectors are readable."""
    where = index.remote or index.dir
    if index.manifest_error is not None:
        raise IndexStoreError(f"{index.manifest_error}; restore it with: assistant doctor --repair, then ingest")
    journal = meta_get(index, "journal")
    if index.manifest is None and index.count() and journal is None:
        raise IndexStoreError(f"{where} holds {index.count()} papers but no manifest.json (deleted?); restore it with: "
                              "assistant doctor --repair, then ingest")
    if index.manifest is not None:
        index.check_manifest(index.manifest)
        if journal and journal.get("op") == "remove":
            complete_remove(index, list(journal.get("ids") or []))
    probe_vectors(index)


def ready_for_remove(index) -> None:
    journal = meta_get(index, "journal")
    if index.manifest is None or index.manifest_error is not None:
        raise damage(index, journal)
    index.check_manifest(index.manifest)
    if journal and journal.get("op") == "remove":
        complete_remove(index, list(journal.get("ids") or []))
    elif journal or not consistent(index):
        raise damage(index, journal)


def source_list(paths) -> list[str]:
    """What the manifest records of an ingest's paths: absolute paths, the bundled corpus by name."""
    from assistant.text.corpus import bundled_corpus

    if not paths:
        return [BUNDLED]
    bundled = bundled_corpus().resolve()
    out = []
    for p in paths:
        full = Path(p).expanduser().resolve()
        out.append(BUNDLED if full == bundled else str(full))
    return out


