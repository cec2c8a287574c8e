"""Opening the index for a read: only an index directory that holds nothing is built, from the bundled corpus."""

from __future__ import annotations

from assistant.config import Settings
from assistant.store import integrity
from assistant.store.index import Index, Progress


def open_index(settings: Settings, build_default: bool = True, progress: Progress | None = None) -> Index:
    """Open the index; only when its directory holds nothing, build it from the bundled corpus first
    (or finish such a build that was interrupted). Anything else wrong is an IndexStoreError."""
    try:
        return Index(settings)
    except integrity.NoIndex:
        if not build_default:
            raise
    from assistant.store.ingest import ingest  # a writer (numpy, Chroma): only when the bundled corpus is built
    from assistant.text.corpus import load_papers

    papers, _ = load_papers()
    ingest(papers, settings, progress=progress, sources=[integrity.BUNDLED])
    return Index(settings)

