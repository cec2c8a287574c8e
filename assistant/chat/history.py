"""Saved conversations: SQLite beside the index, so ``chat --continue`` picks up where you left off."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path

from assistant.qa.answer import Answer
from assistant.errors import IndexStoreError, InputError
from assistant.store.layout import chats_file

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, created REAL, updated REAL, title TEXT);
CREATE TABLE IF NOT EXISTS turns (conversation_id TEXT, n INTEGER, question TEXT, answer TEXT,
                                  PRIMARY KEY (conversation_id, n));
"""


def answer_from_dict(d: dict) -> Answer:
    """A saved turn's answer, as it was: the whole record (``Answer.model_dump``). A chat saved before 2026-12-06 kept
    the ``--json`` view (``quoted`` as one object, no intent, related or ranking): read as that view says."""
    if "text" not in d:  # the --json view
        d = dict(d)
        quoted = d.pop("quoted", None)
        if isinstance(quoted, dict):
            d["quoted"], d["quoted_citations"] = quoted.get("text", ""), quoted.get("citations", [])
        d.setdefault("retrieval_query", d.get("question"))
    return Answer.model_validate(d)


def answer_record(answer: Answer) -> str:
    """What a saved chat keeps of a turn: the whole answer, so that a resumed chat reads it as the live one did."""
    return answer.model_dump_json()


def damaged(path: Path, exc: Exception) -> IndexStoreError:
    return IndexStoreError(f"{path} is damaged ({exc}); move it aside with: assistant doctor --repair (the index "
                           "and its papers are intact; only saved conversations are in that file)")


def check(index_dir: Path) -> str:
    """doctor's look at the saved conversations: a line saying how many, or IndexStoreError when the file is
    damaged."""
    path = chats_file(index_dir)
    if not path.exists():
        return "no saved conversations"
    store = ChatStore(index_dir)
    try:
        ok = store.db.execute("PRAGMA quick_check").fetchone()[0]
        if ok != "ok":
            raise damaged(path, ok)
        return f"{len(store.list())} saved conversations"
    except sqlite3.DatabaseError as exc:
        raise damaged(path, exc) from None
    finally:
        store.db.close()


def set_aside(index_dir: Path) -> Path | None:
    """doctor --repair: a damaged conversations file is renamed (kept: it may be recoverable), so that chat starts a
    new one. The new name, or None when the file was sound."""
    try:
        check(index_dir)
        return None
    except IndexStoreError:
        path = chats_file(index_dir)
        aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        path.rename(aside)
        return aside


class ChatStore:
    def __init__(self, index_dir: Path):
        path = chats_file(index_dir)
        if not Path(index_dir).is_dir():  # never made here: a mistyped --index-dir is named by the index's open
            raise IndexStoreError(f"no index at {index_dir}; build one there with: assistant ingest [PATHS]")
        try:
            self.db = sqlite3.connect(str(path))
            self.db.executescript(SCHEMA)
            self.db.execute("SELECT COUNT(*) FROM turns").fetchone()
            if "filter" not in {r[1] for r in self.db.execute("PRAGMA table_info(conversations)")}:
                with self.db:  # a store from before 2026-12-07: its chats had no /filter kept
                    self.db.execute("ALTER TABLE conversations ADD COLUMN filter TEXT")
        except sqlite3.DatabaseError as exc:
            raise damaged(path, exc) from None

    def new(self, title: str = "") -> str:
        cid = uuid.uuid4().hex[:8]
        now = time.time()
        with self.db:
            self.db.execute("INSERT INTO conversations (id, created, updated, title) VALUES (?, ?, ?, ?)",
                            (cid, now, now, title))
        return cid

    def set_filter(self, cid: str, spec: str | None, scope_from: int = 0) -> None:
        """Keep the chat's /filter (None: lifted) and how many turns it had when the filter last changed, so that a
        resumed chat searches, and reads "them", as the live one did."""
        with self.db:
            self.db.execute("UPDATE conversations SET filter = ? WHERE id = ?",
                            (json.dumps({"spec": spec, "scope_from": scope_from}), cid))

    def filter(self, cid: str) -> tuple[str | None, int]:
        """(the /filter in force, or None; the turn the scope last changed at) of a saved chat."""
        row = self.db.execute("SELECT filter FROM conversations WHERE id = ?", (cid,)).fetchone()
        kept = json.loads(row[0]) if row and row[0] else {}
        return kept.get("spec"), int(kept.get("scope_from") or 0)

    def add_turn(self, cid: str, answer: Answer) -> None:
        with self.db:
            n = self.db.execute("SELECT COUNT(*) FROM turns WHERE conversation_id = ?", (cid,)).fetchone()[0] + 1
            self.db.execute("INSERT INTO turns VALUES (?, ?, ?, ?)",
                            (cid, n, answer.question, answer_record(answer)))
            self.db.execute("UPDATE conversations SET updated = ?, title = CASE WHEN title = '' THEN ? ELSE title END "
                            "WHERE id = ?", (time.time(), answer.question[:80], cid))

    def clear(self, cid: str) -> None:
        """Forget a conversation's turns; its title goes with them (the next question names it)."""
        with self.db:
            self.db.execute("DELETE FROM turns WHERE conversation_id = ?", (cid,))
            self.db.execute("UPDATE conversations SET title = '' WHERE id = ?", (cid,))

    def drop_if_empty(self, cid: str) -> None:
        """Forget a conversation nothing was asked in (a chat opened and left), so that it is neither listed nor
        continued in place of the last one that holds turns."""
        with self.db:
            self.db.execute("DELETE FROM conversations WHERE id = ? AND NOT EXISTS "
                            "(SELECT 1 FROM turns WHERE conversation_id = ?)", (cid, cid))

    def list(self) -> list[dict]:
        """The conversations that hold turns, newest first."""
        rows = self.db.execute(
            "SELECT c.id, c.updated, c.title, COUNT(t.n) FROM conversations c JOIN turns t "
            "ON t.conversation_id = c.id GROUP BY c.id ORDER BY c.updated DESC").fetchall()
        return [{"id": r[0], "updated": time.strftime("%Y-%m-%d %H:%M", time.localtime(r[1])), "title": r[2],
                 "turns": r[3]} for r in rows]

    def latest(self) -> str | None:
        """The conversation ``chat --continue`` resumes: the last one that holds turns."""
        row = self.db.execute("SELECT id FROM conversations c WHERE EXISTS (SELECT 1 FROM turns t WHERE "
                              "t.conversation_id = c.id) ORDER BY updated DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def load(self, cid: str) -> list[Answer]:
        if not self.db.execute("SELECT 1 FROM conversations WHERE id = ?", (cid,)).fetchone():
            raise InputError(f"no saved conversation {cid!r}; list them with: assistant chat --list")
        rows = self.db.execute("SELECT answer FROM turns WHERE conversation_id = ? ORDER BY n", (cid,)).fetchall()
        return [answer_from_dict(json.loads(r[0])) for r in rows]
