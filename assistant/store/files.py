"""Derived files beside the index: checksums, replacing a directory so a reader never sees half of it, and reading
one that a writer may replace meanwhile."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:  # numpy is imported where used: `papers` and `show` need none
    import numpy as np

T = TypeVar("T")


def fingerprint_of(hashes: dict[str, str]) -> str:
    """Identity of a paper set: its ids and content hashes (the BM25 and vector caches are tagged with it)."""
    pairs = sorted(f"{pid}:{h}" for pid, h in hashes.items())
    return hashlib.sha256("\n".join(pairs).encode()).hexdigest()[:16]


def listing_bytes(*lists) -> bytes:
    """The bytes a checksum covers of a derived file's id lists (which ids its rows are)."""
    return json.dumps(lists, ensure_ascii=False, separators=(",", ":")).encode()


def matrix_crc(matrix: np.ndarray, listing: bytes = b"") -> str:
    """Checksum of a matrix's bytes and of the ids of its rows (order-sensitive: shuffled rows or a changed id
    change it); ~1 GB/s."""
    import zlib

    import numpy as np

    crc = zlib.crc32(np.ascontiguousarray(matrix).data)
    return f"{zlib.crc32(listing, crc):08x}:{matrix.shape}"


def files_crc(path: Path, listing: bytes = b"") -> str:
    """Checksum of the files a bm25s index saved (ids.json, which records it, aside) and of its ids."""
    import zlib

    crc = 0
    for f in sorted(path.iterdir()):
        if f.name != "ids.json" and f.is_file():
            crc = zlib.crc32(f.name.encode() + f.read_bytes(), crc)
    return f"{zlib.crc32(listing, crc):08x}"


def scratch(base: Path, name: str) -> tuple[Path, Path, Path]:
    """(temp, final, old) paths for replacing ``base/name``; temp and old are unique to this call."""
    token = f"{os.getpid()}-{os.urandom(4).hex()}"
    return base / f"{name}.tmp-{token}", base / name, base / f"{name}.old-{token}"


def swap_in(tmp: Path, final: Path, old: Path) -> None:
    """Put the directory ``tmp`` in place of ``final`` (two renames; a reader between them retries). Whatever is at
    ``final`` is the index's own derived file: a symbolic link there (even one to itself) is removed, not followed."""
    if final.is_symlink() or (final.exists() and not final.is_dir()):
        final.unlink()
    elif final.exists():
        os.replace(final, old)
    os.replace(tmp, final)


#: How often a read of a derived directory is tried again when a writer swapped it while it was read.
READ_ATTEMPTS = 50


def read_pinned(path: Path, read: Callable[[Path], T | None]) -> T | None:
    """``read(folder)`` of the derived directory at ``path``, from one version of it.

    Writers replace the directory whole (:func:`swap_in`) and never change a file in one, but a reader loading it
    file by file while a writer swaps could mix two versions (one's document count, the other's postings). So the
    directory is opened once and read through that handle (``/proc/self/fd/N`` on Linux): every file comes from
    the directory that was in place when the read began. A read that fails or finds the directory stale counts
    only if that directory is still the one in place; otherwise a writer replaced it meanwhile and it is read
    again. None: missing, stale or damaged (the caller rebuilds it)."""
    for attempt in range(READ_ATTEMPTS):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except FileNotFoundError:  # none saved, or between a swap's two renames
            if attempt >= 3:
                return None
            time.sleep(0.005)
            continue
        except OSError:  # a symbolic link or a file where the directory should be: rebuilt
            return None
        try:
            proc = Path(f"/proc/self/fd/{fd}")
            folder = proc if proc.is_dir() else path
            try:
                found = read(folder)
            except (OSError, ValueError, KeyError, EOFError, TypeError):
                found = None
            if found is not None or _in_place(path, fd):
                return found
        finally:
            os.close(fd)
        time.sleep(0.005)  # replaced while it was read: read the new one
    return None


def _in_place(path: Path, fd: int) -> bool:
    """Whether the directory opened as ``fd`` is still the one at ``path``."""
    try:
        here = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (here.st_ino, here.st_dev) == (held.st_ino, held.st_dev)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a temp file beside it, flushed, renamed over it (a failed write leaves
    the old file, and no empty one)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{os.urandom(3).hex()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
