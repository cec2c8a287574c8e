"""glibc heap tuning for long writes: fewer per-thread arenas, freed pages handed back between phases."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def _libc():
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:  # not glibc (macOS, musl): nothing to tune
        return None


def fewer_malloc_arenas() -> None:
    """Cap glibc's per-thread heaps at 2. Chroma's and onnxruntime's worker threads otherwise each get
    a heap that keeps its freed memory: at 5,000 papers this and :func:`release_memory` cut the
    ingest's peak RSS from 895 to 707 MB. Affects heaps created from now on; a no-op off glibc."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(-8, 2)  # M_ARENA_MAX


def release_memory() -> None:
    """Hand freed heap pages back to the OS between ingest phases (glibc keeps them otherwise)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)

