"""The library functions the CLI calls: one per command."""

from __future__ import annotations

from pathlib import Path

from .answer import Answer, answer_question
from .chat import Conversation
from .config import Settings
from .corpus import Paper, ParseReport, load_papers
from .index import Index, IngestReport, Progress, ingest, open_index
from .retrieve import Retrieval, Retriever


def ingest_paths(paths: list[Path] | None, settings: Settings, rebuild: bool = False, strict: bool = False,
                 progress: Progress | None = None) -> tuple[IngestReport, ParseReport]:
    """Parse everything first (so a bad file changes nothing), then write the index."""
    papers, report = load_papers(paths, strict=strict)
    if not papers:
        from .errors import InputError

        where = ", ".join(str(p) for p in paths) if paths else "the bundled corpus"
        raise InputError(f"no abstracts found in {where}; a text file needs a header line, then abstracts "
                         "separated by blank lines")
    return ingest(papers, settings, rebuild=rebuild, progress=progress), report


def retriever(settings: Settings, progress: Progress | None = None) -> Retriever:
    return Retriever(open_index(settings, progress=progress), settings)


def search(query: str, settings: Settings, k: int | None = None, progress: Progress | None = None) -> Retrieval:
    return retriever(settings, progress).search(query, k=k or max(settings.top_k, 10))


def ask(question: str, settings: Settings, on_token=None, progress: Progress | None = None) -> Answer:
    return answer_question(retriever(settings, progress), question, settings, on_token=on_token)


def conversation(settings: Settings, progress: Progress | None = None) -> Conversation:
    return Conversation(retriever(settings, progress), settings)


def list_papers(settings: Settings, progress: Progress | None = None) -> list[Paper]:
    return list(open_index(settings, progress=progress).all_papers().values())


def get_paper(paper_id: str, settings: Settings, progress: Progress | None = None) -> Paper:
    return open_index(settings, progress=progress).get_paper(paper_id)


def index_stats(settings: Settings) -> dict:
    return Index(settings).stats()
