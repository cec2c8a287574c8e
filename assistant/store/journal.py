"""What a local write keeps on disk until it commits, so that a kill at any moment is finished, or undone, exactly.

An ingest saves, before its first change to the store, what it will write and drop and what it will overwrite
(``journal/<token>.json``, and the vectors of the overwritten records in ``journal/<token>.npz``); its journal
entry in Chroma's meta collection names that file. Killed (kill -9, a power cut), the next command finishes it
from the file: papers already written are skipped, so the work done is kept. Interrupted from the keyboard, the
ingest undoes itself from the same file before it exits: the records it wrote are deleted and the ones it
overwrote or dropped are put back as they were, vectors included, with no embedding.

``ingest --rebuild`` and ``doctor --repair``'s re-embedding build a whole new index beside the old one and swap it
in (:mod:`assistant.store.aside`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from assistant.store.files import write_atomically
from assistant.store.layout import JOURNAL
from assistant.store.records import batches
from assistant.text.corpus import Paper


@dataclass(frozen=True)
class WritePlan:
    """What an ingest writes: papers to (re)write, records to move to another file without re-embedding, ids to
    drop, and the ids it adds (absent before it)."""

    todo: tuple[Paper, ...]
    moved: tuple[Paper, ...]
    drop: tuple[str, ...]
    added: tuple[str, ...]

    def touched(self) -> list[str]:
        """Ids whose stored records this write changes or deletes (what an undo must put back)."""
        return [p.id for p in self.todo if p.id not in set(self.added)] + [p.id for p in self.moved] + list(self.drop)


@dataclass(frozen=True)
class Undo:
    """The records a write overwrites or deletes, as they were: papers and their chunks, with their vectors."""

    papers: dict  # {"ids": [...], "metadatas": [...], "embeddings": array}
    chunks: dict


def capture(index, ids: list[str]) -> Undo:
    """Read the records of ``ids`` and their chunks, vectors included, before a write changes them."""
    import numpy as np

    def grab(collection, **where) -> dict:
        got = collection.get(include=["metadatas", "embeddings"], **where)
        vecs = got["embeddings"]
        return {"ids": list(got["ids"]), "metadatas": list(got["metadatas"] or []),
                "embeddings": np.asarray(vecs if vecs is not None and len(vecs) else np.zeros((0, 0)), dtype=np.float32)}

    if not ids:
        empty = {"ids": [], "metadatas": [], "embeddings": np.zeros((0, 0), dtype=np.float32)}
        return Undo(empty, dict(empty))
    return Undo(grab(index.papers, ids=list(ids)), grab(index.chunks, where={"paper_id": {"$in": list(ids)}}))


def save(index_dir: Path, token: str, plan: WritePlan, undo: Undo) -> str:
    """Write the journal file of a write (the vectors first, then the JSON that names them: a journal file is
    whole or absent); its name, for the journal entry in the store."""
    import numpy as np

    from assistant.store.chunks import paper_dict

    folder = index_dir / JOURNAL
    folder.mkdir(parents=True, exist_ok=True)
    vectors = folder / f"{token}.npz"
    with open(vectors, "wb") as fh:
        np.savez(fh, papers=undo.papers["embeddings"], chunks=undo.chunks["embeddings"])
        fh.flush()
        os.fsync(fh.fileno())
    data = {"todo": [paper_dict(p) for p in plan.todo], "moved": [paper_dict(p) for p in plan.moved],
            "drop": list(plan.drop), "added": list(plan.added),
            "undo": {"papers": _records(undo.papers), "chunks": _records(undo.chunks)}}
    write_atomically(folder / f"{token}.json", json.dumps(data, ensure_ascii=False).encode("utf-8"))
    return token


def _records(part: dict) -> dict:
    return {"ids": part["ids"], "metadatas": part["metadatas"]}


def load(index_dir: Path, token: str | None) -> tuple[WritePlan, Undo] | None:
    """The plan and undo data a journal entry names, or None when its file is missing or unreadable."""
    import numpy as np

    from assistant.store.chunks import paper_from_dict

    if not token:
        return None
    folder = index_dir / JOURNAL
    try:
        data = json.loads((folder / f"{token}.json").read_text(encoding="utf-8"))
        with np.load(folder / f"{token}.npz") as vecs:
            papers, chunks = np.asarray(vecs["papers"]), np.asarray(vecs["chunks"])
        plan = WritePlan(tuple(paper_from_dict(d) for d in data["todo"]),
                         tuple(paper_from_dict(d) for d in data["moved"]), tuple(data["drop"]), tuple(data["added"]))
        undo = Undo({**data["undo"]["papers"], "embeddings": papers}, {**data["undo"]["chunks"], "embeddings": chunks})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return plan, undo


def discard(index_dir: Path, token: str | None) -> None:
    """Delete a journal file once its write has committed (or was undone)."""
    if not token:
        return
    for suffix in (".json", ".npz"):
        with contextlib.suppress(OSError):
            (index_dir / JOURNAL / f"{token}{suffix}").unlink()
    with contextlib.suppress(OSError):
        (index_dir / JOURNAL).rmdir()  # only when empty


def discard_all(index_dir: Path, keep: str | None = None) -> None:
    """Journal files no journal entry names (a write killed before it recorded its entry): nothing refers to them."""
    folder = index_dir / JOURNAL
    if not folder.is_dir():
        return
    for f in folder.iterdir():
        if f.stem != keep:
            with contextlib.suppress(OSError):
                f.unlink() if f.is_file() else shutil.rmtree(f)
    with contextlib.suppress(OSError):
        folder.rmdir()


def restore(index, plan: WritePlan, undo: Undo) -> None:
    """Undo a write: delete every record it wrote or touched, then put the overwritten and dropped ones back as they
    were (records before chunks are deleted, and chunks before records are written back, as ingest writes)."""
    ids = list(dict.fromkeys([p.id for p in plan.todo] + [p.id for p in plan.moved] + list(plan.drop)))
    max_batch = index.client.get_max_batch_size()
    for batch in batches(ids, 5000):
        index.papers.delete(ids=batch)
        index.chunks.delete(where={"paper_id": {"$in": batch}})
    for collection, part in ((index.chunks, undo.chunks), (index.papers, undo.papers)):
        rows = list(range(len(part["ids"])))
        for batch in batches(rows, max_batch):
            collection.add(ids=[part["ids"][i] for i in batch], metadatas=[part["metadatas"][i] for i in batch],
                           embeddings=part["embeddings"][batch])
