"""Saved conversations: SQLite beside the index, so ``chat --continue`` picks up where you left off."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path

from assistant.qa.answer import Answer, Citation
from assistant.errors import InputError
from assistant.store.layout import chats_file
from assistant.search.retrieve import Hit

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, created REAL, updated REAL, title TEXT);
CREATE TABLE IF NOT EXISTS turns (conversation_id TEXT, n INTEGER, question TEXT, answer TEXT,
                                  PRIMARY KEY (conversation_id, n));
"""


def answer_from_dict(d: dict) -> Answer:
    return Answer(
        question=d["question"], text=d["answer"], mode=d["mode"], answerable=d["answerable"],
        citations=[Citation(n=c["n"], paper_id=c["paper_id"], title=c["title"], snippet=c["snippet"],
                            score=c.get("score", 0.0)) for c in d.get("citations", [])],
        sources=[Hit(paper_id=h["paper_id"], title=h["title"], score=h.get("score", 0.0), snippet=h.get("snippet", ""),
                     dense=h.get("dense", 0.0), bm25=h.get("bm25", 0.0), rank=h.get("rank", 0))
                 for h in d.get("sources", [])],
        complete=d.get("complete", True), model=d.get("model"), usage=d.get("usage", {}),
        retrieval_query=d.get("retrieval_query", d["question"]), support=d.get("support", []),
    )


class ChatStore:
    def __init__(self, index_dir: Path):
        Path(index_dir).mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(chats_file(index_dir)))
        self.db.executescript(SCHEMA)

    def new(self, title: str = "") -> str:
        cid = uuid.uuid4().hex[:8]
        now = time.time()
        with self.db:
            self.db.execute("INSERT INTO conversations VALUES (?, ?, ?, ?)", (cid, now, now, title))
        return cid

    def add_turn(self, cid: str, answer: Answer) -> None:
        with self.db:
            n = self.db.execute("SELECT COUNT(*) FROM turns WHERE conversation_id = ?", (cid,)).fetchone()[0] + 1
            self.db.execute("INSERT INTO turns VALUES (?, ?, ?, ?)",
                            (cid, n, answer.question, json.dumps(answer.as_dict(), ensure_ascii=False)))
            self.db.execute("UPDATE conversations SET updated = ?, title = CASE WHEN title = '' THEN ? ELSE title END "
                            "WHERE id = ?", (time.time(), answer.question[:80], cid))

    def clear(self, cid: str) -> None:
        with self.db:
            self.db.execute("DELETE FROM turns WHERE conversation_id = ?", (cid,))

    def list(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT c.id, c.updated, c.title, COUNT(t.n) FROM conversations c LEFT JOIN turns t "
            "ON t.conversation_id = c.id GROUP BY c.id ORDER BY c.updated DESC").fetchall()
        return [{"id": r[0], "updated": time.strftime("%Y-%m-%d %H:%M", time.localtime(r[1])), "title": r[2],
                 "turns": r[3]} for r in rows]

    def latest(self) -> str | None:
        row = self.db.execute("SELECT id FROM conversations ORDER BY updated DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def load(self, cid: str) -> list[Answer]:
        if not self.db.execute("SELECT 1 FROM conversations WHERE id = ?", (cid,)).fetchone():
            raise InputError(f"no saved conversation {cid!r}; list them with: assistant chat --list")
        rows = self.db.execute("SELECT answer FROM turns WHERE conversation_id = ? ORDER BY n", (cid,)).fetchall()
        return [answer_from_dict(json.loads(r[0])) for r in rows]
