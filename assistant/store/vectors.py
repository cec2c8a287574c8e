"""The dense side of an :class:`~assistant.store.index.Index`: every chunk vector in one matrix, saved beside the
store under the state it was built from (below dense.EMBEDDED_HNSW_ABOVE papers)."""

from __future__ import annotations

import functools
import json
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant.store.files import listing_bytes, matrix_crc, read_pinned, scratch, swap_in
from assistant.store.records import PAGE, retry_during_ingest
from assistant.store.layout import VECTORS

if TYPE_CHECKING:  # numpy is imported where used: `papers` and `show` need none
    import numpy as np

#: Bumped whenever the layout of the cached chunk-vector matrix changes.
VECTORS_VERSION = 2  # 2: the checksum covers the ids



@dataclass
class ChunkVectors:
    """Every chunk vector in one matrix, rows grouped by paper: exact dense search is one
    matrix-vector product (a few ms at 60k chunks), with no approximate-index misses."""

    chunk_ids: list[str]
    paper_ids: list[str]  # one per group of rows
    starts: np.ndarray  # first row of each paper's group
    matrix: np.ndarray  # float32, (chunks, dim), unit rows

    @functools.cached_property
    def position(self) -> dict[str, int]:
        """paper id -> its group number (the row of its scores in ``Retriever.dense_all``)."""
        return {pid: i for i, pid in enumerate(self.paper_ids)}

    def rows(self, group: int) -> range:
        """Matrix rows of one paper's chunks."""
        end = int(self.starts[group + 1]) if group + 1 < len(self.starts) else len(self.chunk_ids)
        return range(int(self.starts[group]), end)



class VectorSide:
    """The chunk-vector matrix for :class:`~assistant.store.index.Index` (a mixin: it reads ``dir``, ``state_tag``,
    ``manifest``, ``chunks`` and ``all_papers`` of the index)."""

    def chunk_vectors(self) -> ChunkVectors:
        """All chunk vectors, loaded from ``vectors/`` beside the index (rebuilt from Chroma when that
        copy is missing or belongs to another version of the paper set)."""
        if self._vectors is None:
            self._vectors = self.vectors_from_disk(self.state_tag)
            if self._vectors is None:
                self.rebuild_vectors()
        return self._vectors

    def vectors_from_disk(self, tag: str | None) -> ChunkVectors | None:
        """The saved matrix if it was built from committed state ``tag`` and its bytes and ids are as saved (read
        from one version of the directory whatever a writer swaps in meanwhile: files.read_pinned)."""
        import numpy as np

        def read(folder):
            meta = json.loads((folder / "ids.json").read_text())
            if tag is None or meta.get("state") != tag or meta.get("version") != VECTORS_VERSION:
                return None
            matrix = np.load(folder / "matrix.npy")
            if matrix.ndim != 2 or matrix.shape[0] != len(meta["chunk_ids"]) or \
                    meta.get("crc") != matrix_crc(matrix, _listing(meta)):
                return None  # e.g. rows shuffled, a row or an id overwritten: rebuilt from Chroma
            return ChunkVectors(meta["chunk_ids"], meta["paper_ids"], np.asarray(meta["starts"], dtype=np.int64),
                                matrix)

        return read_pinned(self.dir / VECTORS, read)

    def vectors_status(self) -> str:
        """ok, missing, stale (built from another committed state) or damaged (checksum), for doctor."""
        import numpy as np

        def read(folder):
            meta = json.loads((folder / "ids.json").read_text())
            if meta.get("state") != self.state_tag or meta.get("version") != VECTORS_VERSION:
                return "stale (built from another state of the store)"
            crc = matrix_crc(np.load(folder / "matrix.npy"), _listing(meta))
            return "ok" if crc == meta.get("crc") else "damaged (checksum mismatch)"

        return read_pinned(self.dir / VECTORS, read) or "missing or unreadable"

    def rebuild_vectors(self) -> None:
        """Read every chunk vector from Chroma (in pages) and save the matrix."""
        import numpy as np

        papers = self.all_papers()
        total = retry_during_ingest(self.chunks.count, self.reopen)
        dim = int((self.manifest or {}).get("dim") or 0)
        matrix = np.zeros((total, dim), dtype=np.float32) if dim else None
        rows: list[tuple[str, str, int]] = []  # (chunk id, paper id, chunk number), one per filled row
        seen: set[str] = set()
        for offset in range(0, total, PAGE):
            got = retry_during_ingest(lambda: self.chunks.get(include=["embeddings", "metadatas"], limit=PAGE,
                                                               offset=offset), self.reopen)
            for cid, emb, meta in zip(got["ids"], got["embeddings"], got["metadatas"]):
                # chunks of a paper still being written wait for its record
                if meta.get("paper_id") not in papers or cid in seen or len(rows) >= total:
                    continue
                if matrix is None:
                    matrix = np.zeros((total, len(emb)), dtype=np.float32)
                seen.add(cid)
                matrix[len(rows)] = emb
                rows.append((cid, meta["paper_id"], int(meta.get("chunk") or 0)))
            del got
        self.set_vectors(rows, matrix[:len(rows)] if matrix is not None else np.zeros((0, dim), np.float32))

    def set_vectors(self, rows: list[tuple[str, str, int]], matrix: np.ndarray) -> None:
        """Group chunk rows (chunk id, paper id, chunk number) per paper in source order, keep them as
        the dense search matrix and save them beside the index (a cache: failing to write is harmless)."""
        import numpy as np

        order = {pid: i for i, pid in enumerate(self.all_papers())}
        perm = sorted((i for i in range(len(rows)) if rows[i][1] in order),
                      key=lambda i: (order[rows[i][1]], rows[i][2], rows[i][0]))
        matrix = np.ascontiguousarray(matrix[perm], dtype=np.float32)
        ids = [rows[i][0] for i in perm]
        paper_ids: list[str] = []
        starts: list[int] = []
        for row, i in enumerate(perm):
            if not paper_ids or paper_ids[-1] != rows[i][1]:
                paper_ids.append(rows[i][1])
                starts.append(row)
        self._vectors = ChunkVectors(ids, paper_ids, np.asarray(starts, dtype=np.int64), matrix)
        tmp, final, old = scratch(self.dir, VECTORS)
        try:
            tmp.mkdir(parents=True)
            np.save(tmp / "matrix.npy", matrix)
            meta = {"state": self.state_tag, "version": VECTORS_VERSION, "chunk_ids": ids, "paper_ids": paper_ids,
                    "starts": starts}
            (tmp / "ids.json").write_text(json.dumps({**meta, "crc": matrix_crc(matrix, _listing(meta))}))
            swap_in(tmp, final, old)
            self.derived_errors.pop(VECTORS, None)
        except OSError as exc:  # a cache: a read-only or full disk keeps it in memory only (doctor --repair says so)
            self.derived_errors[VECTORS] = f"{exc.strerror or exc}"
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)


def _listing(meta: dict) -> bytes:
    """What the matrix's checksum covers besides its bytes: which chunk and paper each row is."""
    return listing_bytes(meta["chunk_ids"], meta["paper_ids"], list(meta["starts"]))
