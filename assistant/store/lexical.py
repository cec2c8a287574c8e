"""The BM25 side of an :class:`~assistant.store.index.Index`: the bm25s index over title + abstract, saved
beside the store under the state it was built from, and the term statistics read off it."""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING

from assistant.store.chunks import bm25_text
from assistant.store.files import files_crc, listing_bytes, read_pinned, scratch, swap_in
from assistant.text.terms import bm25s_module, stem_tokenize
from assistant.store.layout import BM25

if TYPE_CHECKING:  # numpy is imported where used: `papers` and `show` need none
    import numpy as np

#: Bumped whenever what BM25 indexes changes, so stale BM25 indexes are rebuilt on open.
BM25_VERSION = 4  # 4: the checksum covers the ids



class LexicalSide:
    """BM25 for :class:`~assistant.store.index.Index` (a mixin: it reads ``dir``, ``state_tag``, ``at_scale`` and
    ``all_papers`` of the index)."""

    def bm25(self):
        """(bm25s index, ids) loaded from disk; rebuilt when missing or out of sync."""
        if self._bm25 is None:
            saved = self._saved_bm25()
            if saved is None:
                self.rebuild_bm25()
            else:
                self._bm25, self._bm25_ids = saved
                self._bm25_pos = self._term_max = None
        return self._bm25, self._bm25_ids

    def _saved_bm25(self):
        """(bm25s index, ids) as saved under this index's state, or None when missing, stale or damaged (the
        checksum covers every file and the ids, so a changed id is damage too). Read from one version of the
        directory whatever a writer swaps in meanwhile (files.read_pinned)."""
        bm25s = bm25s_module()

        def read(folder):
            ids = json.loads((folder / "ids.json").read_text())
            if ids.get("state") != self.state_tag or ids.get("version") != BM25_VERSION or \
                    ids.get("crc") != files_crc(folder, listing_bytes(ids["ids"])):
                return None
            # at scale memory-mapped: a client's memory is what its searches touch of the index
            return bm25s.BM25.load(str(folder), mmap=self.at_scale, show_progress=False, verbosity=0), ids["ids"]

        return read_pinned(self.dir / BM25, read)

    def bm25_status(self) -> str:
        """ok, missing, stale (built from another committed state) or damaged (checksum), for doctor."""
        def read(folder):
            ids = json.loads((folder / "ids.json").read_text())
            if ids.get("state") != self.state_tag or ids.get("version") != BM25_VERSION:
                return "stale (built from another state of the store)"
            return "ok" if ids.get("crc") == files_crc(folder, listing_bytes(ids["ids"])) else \
                "damaged (checksum mismatch)"

        return read_pinned(self.dir / BM25, read) or "missing or unreadable"

    def bm25_positions(self) -> dict[str, int]:
        """paper id -> its row in the BM25 index (built once per BM25 load)."""
        if self._bm25_pos is None:
            self._bm25_pos = {pid: i for i, pid in enumerate(self.bm25()[1])}
        return self._bm25_pos

    def rebuild_bm25(self) -> None:
        bm25s = bm25s_module()
        papers = list(self.all_papers().values())
        retriever = bm25s.BM25(k1=1.2, b=0.75)
        if papers:
            retriever.index(stem_tokenize([bm25_text(p) for p in papers]), show_progress=False)
        ids = [p.id for p in papers]
        self._bm25, self._bm25_ids, self._bm25_pos = (retriever if papers else None), ids, None
        # unique names: readers of one index may rebuild at once (a fixed bm25.tmp made them collide)
        tmp, final, old = scratch(self.dir, BM25)
        try:
            if papers:
                retriever.save(str(tmp), show_progress=False)
            else:
                tmp.mkdir(parents=True)
            (tmp / "ids.json").write_text(json.dumps({"state": self.state_tag, "version": BM25_VERSION,
                                                      "crc": files_crc(tmp, listing_bytes(ids)), "ids": ids}))
            swap_in(tmp, final, old)
            self.derived_errors.pop(BM25, None)
        except OSError as exc:  # a cache: a read-only or full disk keeps it in memory only (doctor --repair says so)
            self.derived_errors[BM25] = f"{exc.strerror or exc}"
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
        if papers and self.at_scale:  # memory-mapped from the saved files, as bm25() loads it; the built one freed
            del retriever
            self._bm25 = bm25s.BM25.load(str(final), mmap=True, show_progress=False, verbosity=0)
        self._idf = None
        self._term_max = None

    def term_weights(self) -> dict[str, float]:
        """IDF of each stemmed term in the BM25 vocabulary (document frequency from the CSC matrix)."""
        import numpy as np

        if self._idf is None:
            retriever, ids = self.bm25()
            idf: dict[str, float] = {}
            freq: dict[str, int] = {}
            if retriever is not None:
                df = np.diff(np.asarray(retriever.scores["indptr"]))
                n = max(len(ids), 1)
                for term, tid in retriever.vocab_dict.items():
                    if tid < len(df):
                        idf[term] = float(np.log(1 + (n - df[tid] + 0.5) / (df[tid] + 0.5)))
                        freq[term] = int(df[tid])
            self._idf, self._df = idf, freq
        return self._idf

    def doc_freq(self, term: str) -> int:
        """How many papers a stemmed term occurs in (0 if none)."""
        self.term_weights()
        return self._df.get(term, 0)

    def term_ceilings(self) -> np.ndarray:
        """Per BM25 vocabulary id, the highest score that term gives any paper (0 for unused ids)."""
        import numpy as np

        if self._term_max is None:
            retriever, _ = self.bm25()
            if retriever is None:
                self._term_max = np.zeros(0, dtype=np.float32)
            else:
                data = np.asarray(retriever.scores["data"], dtype=np.float32)
                indptr = np.asarray(retriever.scores["indptr"])
                out = np.zeros(len(indptr) - 1, dtype=np.float32)
                used = np.flatnonzero(np.diff(indptr) > 0)
                if len(used):
                    out[used] = np.maximum.reduceat(data, indptr[used])
                self._term_max = out
        return self._term_max
