"""Derived files beside the index: checksums, and replacing a directory so a reader never sees half of it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where used: `papers` and `show` need none
    import numpy as np


def fingerprint_of(hashes: dict[str, str]) -> str:
    """Identity of a paper set: its ids and content hashes (the BM25 and vector caches are tagged with it)."""
    pairs = sorted(f"{pid}:{h}" for pid, h in hashes.items())
    return hashlib.sha256("\n".join(pairs).encode()).hexdigest()[:16]


def matrix_crc(matrix: np.ndarray) -> str:
    """Checksum of a matrix's bytes (order-sensitive: shuffled rows change it); ~1 GB/s."""
    import zlib

    import numpy as np

    return f"{zlib.crc32(np.ascontiguousarray(matrix).data):08x}:{matrix.shape}"


def files_crc(path: Path) -> str:
    """Checksum of the files a bm25s index saved (ids.json, which records it, aside)."""
    import zlib

    crc = 0
    for f in sorted(path.iterdir()):
        if f.name != "ids.json" and f.is_file():
            crc = zlib.crc32(f.name.encode() + f.read_bytes(), crc)
    return f"{crc:08x}"


def scratch(base: Path, name: str) -> tuple[Path, Path, Path]:
    """(temp, final, old) paths for replacing ``base/name``; temp and old are unique to this call."""
    token = f"{os.getpid()}-{os.urandom(4).hex()}"
    return base / f"{name}.tmp-{token}", base / name, base / f"{name}.old-{token}"


def swap_in(tmp: Path, final: Path, old: Path) -> None:
    """Put the directory ``tmp`` in place of ``final`` (two renames; a reader between them rebuilds)."""
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)

