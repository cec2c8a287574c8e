"""A whole index built beside the old one, then swapped in: ``ingest --rebuild`` and ``doctor --repair``'s
re-embedding, so that a kill at any moment leaves the old index or the new one, never an empty or partial one.

``rebuild.json`` in the index directory is the journal: ``building`` while the new index is written into
``rebuild-<token>/`` (the old one is untouched and still answers), then ``swapping`` while its parts are moved
into place one by one, the manifest last (the old parts go to ``rebuild-<token>.old/``). The next command, under
the write lock, reads it: a build that was ``building`` is dropped (the old index stays), a ``swapping`` one is
finished (every move is idempotent), then both folders are deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from pathlib import Path

from assistant.store.files import write_atomically
from assistant.store.layout import ASIDE, SWAPPED


def _journal(base: Path) -> dict | None:
    try:
        data = json.loads((base / ASIDE).read_text())
        return data if isinstance(data, dict) and data.get("side") else None
    except (OSError, ValueError):
        return None


def _write(base: Path, data: dict) -> None:
    write_atomically(base / ASIDE, json.dumps(data).encode())


def begin(base: Path, what: str) -> Path:
    """Start a build beside the index in ``base`` (``what``: for messages); the folder to build it in."""
    token = f"{os.getpid()}-{os.urandom(4).hex()}"
    side = base / f"rebuild-{token}"
    base.mkdir(parents=True, exist_ok=True)
    _write(base, {"phase": "building", "side": side.name, "what": what, "started": time.time()})
    side.mkdir()
    return side


def swap(base: Path, side: Path) -> None:
    """Put the index built in ``side`` in place of the one in ``base`` (journaled: see the module)."""
    data = _journal(base) or {"side": side.name, "what": "a rebuild"}
    _write(base, {**data, "phase": "swapping"})
    from assistant.store.integrity import crash_point

    crash_point("aside-swapping")
    _finish_swap(base, side)


def _finish_swap(base: Path, side: Path) -> None:
    old = side.with_name(side.name + ".old")
    old.mkdir(exist_ok=True)
    for name in SWAPPED:
        new = side / name
        if not (new.exists() or new.is_symlink()):
            continue  # moved in already (or the new index has none: a papers.json left unwritten)
        here = base / name
        if here.is_symlink() or here.exists():
            os.replace(here, old / name)
        os.replace(new, here)
    _forget_chroma()
    (base / ASIDE).unlink(missing_ok=True)
    shutil.rmtree(side, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)


def abandon(base: Path, side: Path) -> None:
    """Drop a build that did not finish: the old index is as it was."""
    shutil.rmtree(side, ignore_errors=True)
    with contextlib.suppress(OSError):
        (base / ASIDE).unlink()


def _forget_chroma() -> None:
    """This process's Chroma handles on the swapped store point at the old files: drop them."""
    import sys

    if "chromadb" in sys.modules:
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()


def pending(base: Path) -> bool:
    return (base / ASIDE).exists()


def recover(base: Path) -> str | None:
    """Finish or drop a build a kill interrupted (call under the write lock); what was done, for the user."""
    data = _journal(base)
    if data is None:
        with contextlib.suppress(OSError):
            (base / ASIDE).unlink()
        return None
    side = base / data["side"]
    what = data.get("what") or "a rebuild"
    if data.get("phase") == "swapping" and side.is_dir():
        _finish_swap(base, side)
        return f"finished {what}, which was interrupted while its new index was put in place"
    abandon(base, side)
    shutil.rmtree(side.with_name(side.name + ".old"), ignore_errors=True)
    return f"{what} was interrupted before it finished; the index is as it was before it"
