"""The ingest lock of a Chroma server shared by several clients (server mode): a collection created atomically,
holding its owner, a token of the holder and an expiry; taken over only once expired, by exactly one client."""

from __future__ import annotations

import contextlib
import os
import socket
import time

from assistant.errors import IndexStoreError

#: A collection that exists only while a client writes to a Chroma server: creating it is atomic.
SERVER_LOCK = "assistant_ingest_lock"
#: A server lock not refreshed for this long belongs to a client that died.
LOCK_TTL = 120.0


def owner() -> str:
    """This process, as a lock or a journal names its writer."""
    return f"{socket.gethostname()}:{os.getpid()}"


def server_lock_holder(client) -> str | None:
    try:
        meta = client.get_collection(SERVER_LOCK).metadata or {}
    except Exception:
        return None
    if _lapsed(meta):
        return None
    return str(meta.get("owner", "?"))


def dead_here(holder: str | None) -> bool:
    """Whether a lock's owner (``host:pid``) is a process of this machine that no longer runs: a client killed
    with its server (the server restarted with the lock it held) leaves a lock nobody will release."""
    host, _, pid = str(holder or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's process)
        return False
    return False


def _lapsed(meta: dict) -> bool:
    """A lock past its expiry, or held by a process of this machine that is gone."""
    return float(meta.get("expires", 0)) < time.time() or dead_here(meta.get("owner"))


#: A client taking over an expired server lock waits this long before reading it back. Chroma has no
#: compare-and-swap, so every client that found the lock expired writes its own token; the last write wins,
#: and each reads back whose token is there. A client's write follows its read of the expired lock by one
#: request (milliseconds), so after this wait every such write has landed.
LOCK_SETTLE = 0.5


def _lock_meta(client) -> dict:
    try:
        return dict(client.get_collection(SERVER_LOCK).metadata or {})
    except Exception:  # no lock
        return {}


def _lock_busy(holder, url: str) -> IndexStoreError:
    return IndexStoreError(f"another client ({holder or 'unknown'}) is writing to the Chroma server at {url}; "
                           "wait for it to finish (a lock left by a dead client of another machine expires within "
                           f"{LOCK_TTL:.0f} s; one of this machine's is taken over at once)")


def _take_server_lock(client, url: str, mine: str, token: str):
    """The lock collection, held with ``token``: created if there is none (creation is atomic), taken over
    if its owner let it expire (write our token, wait :data:`LOCK_SETTLE`, proceed only if it is still
    ours), else IndexStoreError naming the holder."""
    for _ in range(3):
        mark = {"owner": mine, "token": token, "expires": time.time() + LOCK_TTL}
        try:
            return client.create_collection(SERVER_LOCK, metadata=mark)
        except Exception:  # it exists
            pass
        try:
            col = client.get_collection(SERVER_LOCK)
        except Exception:  # released since: create it
            continue
        meta = col.metadata or {}
        if not _lapsed(meta):
            raise _lock_busy(meta.get("owner"), url)
        with contextlib.suppress(Exception):  # deleted meanwhile: the read back says
            col.modify(metadata=mark)
        time.sleep(LOCK_SETTLE)
        held = _lock_meta(client)
        if held.get("token") == token:
            return col
        if held:  # another client that found it expired wrote after us: it holds the lock
            raise _lock_busy(held.get("owner"), url)
    raise _lock_busy(None, url)


@contextlib.contextmanager
def server_lock(client, url: str):
    """The ingest lock of a Chroma server shared by several clients: a collection created atomically,
    with its owner, a token of this holder and an expiry; ``refresh()`` (called per group of papers) checks
    the lock is still this holder's and pushes the expiry on."""
    import uuid

    mine = owner()
    token = f"{mine}:{uuid.uuid4().hex[:12]}"  # two threads of one process are two writers
    col = _take_server_lock(client, url, mine, token)

    def refresh() -> None:
        held = _lock_meta(client)
        if held.get("token") != token:  # this writer stalled past the expiry and another took over
            raise IndexStoreError(f"another client ({held.get('owner', 'unknown')}) took over the ingest lock of "
                                  f"the Chroma server at {url} (this write stalled for over {LOCK_TTL:.0f} s); "
                                  "wait for it to finish, then run the command again: it resumes where it stopped")
        col.modify(metadata={"owner": mine, "token": token, "expires": time.time() + LOCK_TTL})

    try:
        yield refresh
    finally:
        with contextlib.suppress(Exception):
            if _lock_meta(client).get("token") == token:
                client.delete_collection(SERVER_LOCK)
