"""Opening the index for a read: a write a kill interrupted is finished (or undone) first, and only the default
index directory, when it holds nothing, is built from the bundled corpus."""

from __future__ import annotations

from assistant.config import Settings, is_default_dir, local_dir
from assistant.errors import IndexStoreError
from assistant.store import integrity
from assistant.store.index import Index, Progress
from assistant.store.layout import ASIDE, JOURNAL


def open_index(settings: Settings, build_default: bool = True, progress: Progress | None = None) -> Index:
    """Open the index. A write a kill interrupted (a rebuild beside the index, an ingest with its journal file) is
    finished or undone first, when no other process is writing. Only when the index directory holds nothing,
    and it is the default one (not a directory named with --index-dir, which may be mistyped), is it built from
    the bundled corpus (or such a build that was interrupted finished). Anything else wrong is an
    IndexStoreError."""
    if not settings.index.chroma_url and _interrupted(settings):
        from assistant.store.ingest import recover

        try:
            relabel(progress, "Finishing an interrupted write")  # not "building the bundled corpus (first run)"
            for line in recover(settings, progress, wait=False):
                note(progress, line)
        except IndexStoreError:  # another process holds the write lock: it is writing, reads see its last commit
            pass
    try:
        return Index(settings)
    except integrity.NoIndex as exc:
        if not build_default or not (is_default_dir(settings) or exc.resume_bundled):
            raise integrity.NoIndex(f"no index at {settings.index.chroma_url or local_dir(settings)}; build one "
                                    "there with: assistant ingest [PATHS] (the bundled corpus is built on first use "
                                    "only in the default index directory)") from None
    from assistant.store.ingest import ingest  # a writer (numpy, Chroma): only when the bundled corpus is built
    from assistant.text.corpus import load_papers

    papers, _ = load_papers()
    ingest(papers, settings, progress=progress, sources=[integrity.BUNDLED])
    return Index(settings)


def _interrupted(settings: Settings) -> bool:
    base = local_dir(settings)
    return (base / ASIDE).exists() or (base / JOURNAL).is_dir()


def relabel(progress, label: str) -> None:
    """Name the work a progress bar shows from now on, when it can be named (a plain callable cannot)."""
    said = getattr(progress, "relabel", None)
    if callable(said):
        said(label)


def note(progress, line: str) -> None:
    """Tell the user something the command did besides what was asked (a finished interrupted write)."""
    said = getattr(progress, "note", None)
    if callable(said):
        said(line)
