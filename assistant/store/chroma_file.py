"""A local Chroma store read with sqlite3, without chromadb (importing it costs ~1.7 s CPU a process).

What the read checks compare (integrity.verified_directly): how many records each collection holds, where each
collection's log stands, and the metadata of the meta collection. The layout is chromadb 1.5.x's, whose Rust core
writes ``chroma/chroma.sqlite3`` (rust/sqlite/migrations; rust/segment/src/sqlite_metadata.rs;
rust/log/src/sqlite_log.rs and local_compaction_manager.rs):

- ``collections`` (id, name, database_id) under ``databases`` (tenant ``default_tenant``, ``default_database``);
- each collection's ``segments``: one of scope ``METADATA`` (type ``urn:chroma:segment/metadata/sqlite``) whose
  records are the rows of ``embeddings`` with its ``segment_id``; ``count()`` is their number;
- ``max_seq_id``: the last log entry applied to a metadata segment (no row: 0); every add, upsert, update or
  delete is a new entry, so a write to a collection moves it;
- ``embeddings_queue``: the log, one row per write, ``topic`` ``persistent://<tenant>/<namespace>/<collection
  id>``. Chroma applies the entries past a segment's ``max_seq_id`` before it counts (LocalExecutor.count,
  BackfillMessage): after a crash between a write to the log and its application, only chromadb can count;
- ``collection_metadata``: a collection's metadata, one row per key (str, int, float or bool value).

Anything else (another schema version, a missing file or table, a writer holding the database, a hot journal)
is undecided here: the caller asks chromadb.
"""

from __future__ import annotations

from pathlib import Path

#: The last migration of each kind applied to a chromadb 1.5.x store (``migrations``); at any other version the
#: layout above is not assumed.
SCHEMA = {"embeddings_queue": 2, "metadb": 6, "sysdb": 10}
#: Where a PersistentClient keeps its collections (chromadb's DEFAULT_TENANT and DEFAULT_DATABASE).
DATABASE = ("default_tenant", "default_database")
METADATA_SEGMENT = "urn:chroma:segment/metadata/sqlite"


def read_store(path: Path, counted: tuple[str, ...], meta: str) -> dict | None:
    """``{name: records, ..., "seq": {name: log position, ...}, "meta": {key: value}}`` for the ``counted``
    collections and the ``meta`` collection of the store at ``path`` (chroma.sqlite3), read in one read-only
    transaction; None when this cannot decide (see the module docstring)."""
    import sqlite3

    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        db.execute("BEGIN")  # one read transaction: every figure from the same committed state
        return _read(db, counted, meta)
    except (sqlite3.Error, ValueError, TypeError):
        return None
    finally:
        db.close()


def _read(db, counted: tuple[str, ...], meta: str) -> dict | None:
    if dict(db.execute("SELECT dir, MAX(version) FROM migrations GROUP BY dir")) != SCHEMA:
        return None
    names = (*counted, meta)
    ids = dict(db.execute("SELECT c.name, c.id FROM collections c JOIN databases d ON c.database_id = d.id "
                          f"WHERE d.tenant_id = ? AND d.name = ? AND c.name IN ({', '.join('?' * len(names))})",
                          (*DATABASE, *names)))
    if any(name not in ids for name in names):
        return None
    out: dict = {"seq": {}}
    for name in counted:
        segments = db.execute("SELECT id FROM segments WHERE collection = ? AND scope = 'METADATA' AND type = ?",
                              (ids[name], METADATA_SEGMENT)).fetchall()
        if len(segments) != 1:
            return None
        segment = segments[0][0]
        out[name] = db.execute("SELECT COUNT(*) FROM embeddings WHERE segment_id = ?", (segment,)).fetchone()[0]
        seq = db.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (segment,)).fetchone()
        if seq is not None and not isinstance(seq[0], int):
            return None
        out["seq"][name] = seq[0] if seq is not None else 0
    # the log's tail, read by its primary key: an entry past its collection's position is not applied yet
    for topic, last in db.execute("SELECT topic, MAX(seq_id) FROM embeddings_queue WHERE seq_id > ? GROUP BY topic",
                                  (min(out["seq"].values(), default=0),)):
        if any(topic.endswith("/" + ids[name]) and last > out["seq"][name] for name in counted):
            return None
    out["meta"] = {key: next((v for v in values if v is not None), None) for key, *values in db.execute(
        "SELECT key, str_value, int_value, float_value, bool_value FROM collection_metadata WHERE collection_id = ?",
        (ids[meta],))}
    return out
