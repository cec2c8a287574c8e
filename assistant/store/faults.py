"""Storage faults as one line the user can act on: what is wrong, and the command or the fix that mends it (a
full disk, a read-only or unreadable directory, a lost server, advice that never drops a user's sources)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from pathlib import Path

from assistant.errors import IndexStoreError

BUNDLED = "bundled"
#: Below this many free bytes a failed write is reported as a full disk.
LOW_DISK = 64 * 1024 * 1024


def source_names(sources: list[str] | None) -> str:
    return ", ".join("the bundled corpus" if s == BUNDLED else s for s in sources or []) or "unrecorded files"


def ingest_command(sources: list[str] | None) -> str:
    paths = [shlex.quote(s) for s in sources or [] if s != BUNDLED]
    return "assistant ingest" + "".join(" " + p for p in paths) if sources else "assistant ingest FILES"


def rebuild_advice(manifest: dict | None) -> str:
    """How to rebuild without losing the user's papers: ``--rebuild`` re-reads the recorded sources."""
    sources = (manifest or {}).get("sources")
    if sources == [BUNDLED]:
        return "assistant ingest --rebuild"
    if sources:
        return f"assistant ingest --rebuild (re-reads {source_names(sources)})"
    return "assistant ingest --rebuild FILES, naming the files you ingested (this index does not record them)"


def read_only_error(path: Path) -> IndexStoreError:
    return IndexStoreError(f"the index directory {path} is read-only, and Chroma writes to its store even to "
                           f"read it; make it writable, or copy it (cp -r {shlex.quote(str(path))} ~/index) and "
                           "set ASSISTANT_INDEX_DIR to the copy")


def permission_error(path: Path, index_dir: Path) -> IndexStoreError:
    """A part of the index this user may not read or write: a permission to fix, not damage to re-ingest over."""
    return IndexStoreError(f"cannot use {path}: permission denied; give your user access to the index (chmod -R u+rwX "
                           f"{shlex.quote(str(index_dir))}, or run as the user who built it): nothing needs "
                           "re-ingesting")


def check_link(index_dir: Path) -> None:
    """Refuse an index directory that is a link to nothing (an index on a drive not mounted): "no index there;
    build one with: assistant ingest", then "File exists" from the ingest, sent the user round in a circle."""
    path = Path(index_dir)
    for link in (path, *path.parents):
        if link.is_symlink() and not link.exists():
            raise IndexStoreError(f"the index directory {path} goes through {link}, a link to {os.readlink(link)}, "
                                  "which does not exist (is its drive mounted?); mount it, or point the link "
                                  "elsewhere")


def check_access(index_dir: Path) -> None:
    """Refuse, with the fix, an index whose Chroma store this user cannot read and write: a permission to give
    (or, on a read-only file system, a copy to make), never damage to re-ingest over."""
    from assistant.store.layout import CHROMA, CHROMA_FILE

    store = index_dir / CHROMA
    for path, read in ((index_dir, os.R_OK | os.X_OK), (store, os.R_OK | os.X_OK), (store / CHROMA_FILE, os.R_OK)):
        if path.exists() and not os.access(path, read):
            raise permission_error(path, index_dir)
    for path in (store, store / CHROMA_FILE):
        if path.exists() and not os.access(path, os.W_OK):
            if _read_only_fs(path):
                raise read_only_error(index_dir)
            raise permission_error(path, index_dir)


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def disk_full(path: Path) -> bool:
    with contextlib.suppress(OSError):
        target = path if path.exists() else path.parent
        return shutil.disk_usage(target).free < LOW_DISK
    return False


#: Free space a write wants before it starts: Chroma can hang, not fail, when the disk fills under it
#: (a metadata write on a full tmpfs never returned in our tests).
SPARE_BYTES = 8 * 1024 * 1024
BYTES_PER_PAPER = 16 * 1024  # ~11 KB measured per short paper (records, chunk vectors, HNSW, BM25)


def check_space(path: Path, papers: int = 0) -> None:
    """Refuse a write that would likely fill the disk, before it changes anything."""
    need = SPARE_BYTES + BYTES_PER_PAPER * papers
    target = path if path.exists() else path.parent
    with contextlib.suppress(OSError):
        if shutil.disk_usage(target).free < need:
            raise disk_full_error(path, need)


def disk_full_error(path: Path, need: int | None = None) -> IndexStoreError:
    try:
        free = f"{shutil.disk_usage(path if path.exists() else path.parent).free / 1e6:.1f} MB free"
    except OSError:
        free = "free space unknown"
    if need:
        free += f"; this write wants {need / 1e6:.0f} MB"
    return IndexStoreError(f"the disk holding {path} is full ({free}); free some space and run the command "
                           "again (what was committed is intact; an ingest resumes where it stopped)")


def server_lost_error(url: str, exc: BaseException, timeout: float | None = None) -> IndexStoreError:
    return IndexStoreError(f"lost the Chroma server at {url} ({what_failed(exc, timeout)}); start it again "
                           f"({chroma_run(url)}) and run the command again (what was committed is intact)")


def bound_requests(client, seconds: float) -> None:
    """Every request of a Chroma HTTP client bounded (chromadb's own session waits forever: a server that accepts
    and never answers hung every command): connecting 10 s, the rest ``seconds``."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(seconds, connect=min(10.0, seconds))


def answers_in_time(host: str, port: int, ssl: bool, seconds: float) -> None:
    """Whether a Chroma server answers at all, asked with a bound before chromadb's client (which asks with none)
    is made: a timeout raises (httpx.TimeoutException); any other failure is left to that client to say."""
    import httpx

    try:
        httpx.get(f"{'https' if ssl else 'http'}://{host}:{port}/api/v2/heartbeat",
                  timeout=httpx.Timeout(seconds, connect=min(10.0, seconds)))
    except httpx.TimeoutException:
        raise
    except httpx.HTTPError:
        pass


def what_failed(exc: BaseException, timeout: float | None = None) -> str:
    """A request's failure in words: a timeout says how long it waited, anything else its type."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {timeout:g} s" if timeout else "no answer in time"
    return type(exc).__name__


def chroma_run(url: str) -> str:
    """The command that starts a Chroma server where ``url`` points."""
    from urllib.parse import urlparse

    parsed = urlparse(url if "://" in url else f"http://{url}")
    try:
        port = parsed.port or 8000
    except ValueError:
        port = 8000
    # with the folder it served: started without --path, Chroma serves an empty store, and the index seemed gone
    return f"chroma run --path <its data folder> --host {parsed.hostname or '127.0.0.1'} --port {port}"


def translate(exc: BaseException, settings) -> IndexStoreError | None:
    """A storage failure that escaped as a library exception, as one line the user can act on."""
    import errno
    import sqlite3

    from assistant.config import local_dir

    url = settings.index.chroma_url
    where = local_dir(settings) if settings is not None else Path(".")
    module = type(exc).__module__.split(".")[0]
    if url and module in {"httpx", "httpcore"}:
        return server_lost_error(url, exc, settings.tuning.chroma_timeout)
    if url and module == "chromadb" and any(s in str(exc) for s in ("Connect", "connection", "Connection")):
        return server_lost_error(url, exc, settings.tuning.chroma_timeout)
    if module in {"click", "typer"}:  # a command's own exit
        return None
    if isinstance(exc, PermissionError) and exc.filename:
        path = Path(exc.filename)
        if where.resolve() == path.resolve() or where.resolve() in path.resolve().parents:
            return permission_error(path, where)
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EROFS):
        # a file outside the index (say, --save on a full or read-only disk) is named as itself
        path = Path(exc.filename) if exc.filename else where
        full, base = path.resolve(), where.resolve()
        inside = full == base or base in full.parents
        if exc.errno == errno.ENOSPC:
            return disk_full_error(where if inside else path)
        return read_only_error(where) if inside else None
    text = str(exc).lower()
    if "disk is full" in text or "no space" in text:
        return disk_full_error(where)
    if "readonly" in text or "read-only" in text:
        return read_only_error(where)
    if isinstance(exc, sqlite3.OperationalError) and "unable to open" in text and not os.access(where, os.W_OK):
        return read_only_error(where)
    if module == "chromadb" and disk_full(where):  # Chroma names a full disk "Error in compaction"
        return disk_full_error(where)
    if "disk i/o error" in text or "(code: 778)" in text:  # SQLite's SQLITE_IOERR_WRITE: a quota or file-size limit
        return IndexStoreError(f"the Chroma store in {where} could not write (disk I/O error: a full disk, a quota or "
                               "a file-size limit such as ulimit -f?); what was committed is intact: lift the limit "
                               "or free space, then run the command again (an ingest resumes where it stopped)")
    return None
