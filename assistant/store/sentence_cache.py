"""Sentence vectors of abstracts, for an :class:`~assistant.store.index.Index`: embedded by the ingest
(``ASSISTANT_SENTENCES=ingest``) or on first sight, kept for the life of the index object and in
``sentences.sqlite`` beside it (content-addressed, so never stale; safe to delete: what is missing is embedded
again when it is needed)."""

from __future__ import annotations

import contextlib
import hashlib
import json

from assistant.store.layout import SENTENCES

#: Sentence vectors of abstracts (a cache; safe to delete).
SENTENCE_CACHE = SENTENCES


class SentenceSide:
    """Sentence vectors for :class:`~assistant.store.index.Index` (a mixin: it reads ``dir``, ``embedder_id`` and
    ``embedder`` of the index)."""

    def sentence_vectors(self, paper_id: str, abstract: str):
        """(sentences, their vectors) of one abstract, cached for the life of this Index (a chat session
        asks about the same papers again and again) and on disk beside the index (so a new process,
        e.g. the next ``assistant ask``, does not embed them again)."""
        cache = self._sentence_cache
        key = (paper_id, hash(abstract))
        if key not in cache:
            disk_key = self._sentence_key(abstract)
            found = self._sentences_from_disk(disk_key)
            if found is None:
                from assistant.text.sentences import split_sentences
                from assistant.embed.embedder import embed_array

                sentences = split_sentences(abstract)
                found = (sentences, embed_array(self.embedder, sentences))
                self._sentences_to_disk(disk_key, *found)
            cache[key] = found
            if len(cache) > 4096:  # bounded: drop the oldest entry
                cache.pop(next(iter(cache)))
        return cache[key]

    def sentences_missing(self, abstracts: list[str]) -> list[tuple[str, list[str]]]:
        """(key, sentences) of each of ``abstracts`` whose sentence vectors are not stored yet, for
        :meth:`store_sentences` (the ingest embeds them with the chunks)."""
        from assistant.text.sentences import split_sentences

        keys = {self._sentence_key(a): a for a in abstracts}
        have: set[str] = set()
        if (self.dir / SENTENCE_CACHE).exists():
            import sqlite3

            try:
                with contextlib.closing(self._sentence_db()) as db:
                    for start in range(0, len(keys), 500):
                        chunk = list(keys)[start:start + 500]
                        have.update(k for (k,) in db.execute(
                            f"SELECT key FROM sentences WHERE key IN ({','.join('?' * len(chunk))})", chunk))
            except sqlite3.Error:  # unreadable: embed them all (storing starts the cache afresh)
                have = set()
        return [(k, split_sentences(a)) for k, a in keys.items() if k not in have]

    def store_sentences(self, todo: list[tuple[str, list[str]]], vecs) -> None:
        """Store the vectors of :meth:`sentences_missing`'s sentences (``vecs``: their rows, in order)."""
        import numpy as np

        start = 0
        rows = []
        for key, sentences in todo:
            part = np.ascontiguousarray(vecs[start:start + len(sentences)], dtype=np.float32)
            start += len(sentences)
            rows.append((key, json.dumps(sentences), int(vecs.shape[1]), part.tobytes()))
        self._rows_to_disk(rows)

    def _sentence_key(self, abstract: str) -> str:
        return hashlib.sha256(f"{self.embedder_id}\n{abstract}".encode()).hexdigest()[:32]

    def _sentence_db(self):
        import sqlite3

        db = sqlite3.connect(self.dir / SENTENCE_CACHE, timeout=2)
        db.execute("CREATE TABLE IF NOT EXISTS sentences (key TEXT PRIMARY KEY, sentences TEXT, dim INTEGER, vecs BLOB)")
        return db

    def _sentences_from_disk(self, key: str):
        import sqlite3

        import numpy as np

        if not (self.dir / SENTENCE_CACHE).exists():
            return None
        try:
            with contextlib.closing(self._sentence_db()) as db:
                row = db.execute("SELECT sentences, dim, vecs FROM sentences WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:  # a cache: unreadable means recompute
            return None
        if row is None:
            return None
        try:  # content-addressed (embedder + abstract), so never stale; a damaged row is recomputed
            sentences = json.loads(row[0])
            vecs = np.frombuffer(row[2], dtype=np.float32).reshape(len(sentences), row[1]) if sentences else \
                np.zeros((0, row[1]), dtype=np.float32)
        except (ValueError, TypeError):
            return None
        return sentences, vecs

    def _sentences_to_disk(self, key: str, sentences: list[str], vecs) -> None:
        import numpy as np

        self._rows_to_disk([(key, json.dumps(sentences), int(vecs.shape[1]) if vecs.ndim == 2 else 0,
                             np.ascontiguousarray(vecs, dtype=np.float32).tobytes())])

    def _rows_to_disk(self, rows: list[tuple]) -> None:
        import sqlite3

        if not rows:
            return
        for attempt in range(2):
            try:
                with contextlib.closing(self._sentence_db()) as db, db:
                    db.executemany("INSERT OR REPLACE INTO sentences VALUES (?, ?, ?, ?)", rows)
                return
            except sqlite3.OperationalError:  # read-only or busy index dir: the cache is optional
                return
            except sqlite3.DatabaseError:  # the file is damaged: start the cache afresh, once
                if attempt:
                    return
                try:
                    (self.dir / SENTENCE_CACHE).unlink(missing_ok=True)
                except OSError:
                    return
            except OSError:
                return
