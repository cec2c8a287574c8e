"""How the store's records read back: paging through a collection, a paper from its record, a read retried while
an ingest in another process moves the store. Below both the index and the dense side, which read records."""

from __future__ import annotations

import json

from assistant.text.corpus import Paper

#: Records read per Chroma ``get``.
PAGE = 5000


def paged(collection, include: list[str]):
    """Yield (id, *included fields) for every record, read PAGE at a time: one ``get`` of a whole
    20k-paper collection costs hundreds of MB while Chroma converts it."""
    total = collection.count()
    for offset in range(0, total, PAGE):
        got = collection.get(include=include, limit=PAGE, offset=offset)
        yield from zip(got["ids"], *(got[name] for name in include))



def batches(items: list, size: int):
    """``items`` in runs of at most ``size``."""
    for i in range(0, len(items), size):
        yield items[i:i + size]


def meta_to_paper(meta: dict, document: str | None = None) -> Paper:
    """The paper a record holds (indexes before 2026-12-01 kept the abstract as the document)."""
    d = json.loads(meta["paper_json"])
    abstract = meta["abstract"] if "abstract" in meta else document or ""
    return Paper(id=d["id"], title=d["title"], abstract=abstract, source=d["source"], position=d["position"],
                 authors=tuple(d.get("authors") or ()), url=d.get("url"), date=d.get("date"),
                 keywords=tuple(d.get("keywords") or ()), urls=tuple(d.get("urls") or ()),
                 title_derived=bool(d.get("title_derived")), extra=d.get("extra") or {},
                 origin=d.get("origin") or meta.get("origin"))



def retry_during_ingest(call, reopen, attempts: int = 4):
    """Run a Chroma read; an ingest in another process can leave this process's cached vector
    segments behind the metadata ("Error finding id"). Reopening the store and reading again sees
    a consistent state; only if that keeps failing is it the user's problem."""
    import time

    for attempt in range(attempts):
        try:
            return call()
        except Exception as exc:  # chromadb raises InternalError and friends
            if type(exc).__module__.split(".")[0] != "chromadb":
                raise
            if attempt == attempts - 1:
                from assistant.store.integrity import read_failure

                # an ingest under way, a full disk or a damaged store: read_failure says which
                raise read_failure(getattr(reopen, "__self__", None), exc) from exc
            time.sleep(0.2 * (attempt + 1))
            reopen()
