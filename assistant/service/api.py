"""The service layer: one function per user action, and what the terminal needs to show corpus and model text
safely. The CLI imports nothing else of the package."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from assistant.config import Settings
from assistant.prompts import EXTRACTIVE_LABEL
from assistant.text.corpus import Paper, ParseReport, load_papers
from assistant.text.latex import readable
from assistant.text.safetext import clip, for_terminal, json_for_terminal
from assistant.store.index import Progress
from assistant.store.ingest import IngestReport, ingest
from assistant.store.opening import open_index

__all__ = [
    "ingest_paths", "retriever", "search", "ask", "conversation", "chat_store", "list_papers", "get_paper",
    "remove_papers", "doctor", "which", "summarize", "corpus_map", "check_save_target", "save_answers",
    "storage_error", "default_gate",
    # for showing corpus and model text: LaTeX made readable, made inert for a terminal, cut at a word
    "EXTRACTIVE_LABEL", "readable", "for_terminal", "json_for_terminal", "clip",
]

if TYPE_CHECKING:  # imported where used: `papers` and `show` need none of them (~0.3 s CPU)
    from assistant.chat.history import ChatStore
    from assistant.chat.conversation import Conversation
    from assistant.errors import AssistantError
    from assistant.qa.answer import Answer
    from assistant.search.retrieve import Retrieval, Retriever


def ingest_paths(paths: list[Path] | None, settings: Settings, rebuild: bool = False, strict: bool = False,
                 progress: Progress | None = None) -> tuple[IngestReport, ParseReport]:
    """Parse everything first (so a bad file changes nothing), then write the index. ``--rebuild``
    without paths re-reads the sources the manifest records, never silently the bundled corpus."""
    from assistant.store.ingest import rebuild_sources
    from assistant.store.integrity import source_list

    if rebuild and not paths:
        paths = rebuild_sources(settings)
    papers, report = load_papers(paths, strict=strict)
    if not papers:
        from assistant.errors import InputError

        where = ", ".join(str(p) for p in paths) if paths else "the bundled corpus"
        if report.skipped:  # every record was rejected: the first reason says what to fix
            more = f" (and {len(report.skipped) - 1} more)" if len(report.skipped) > 1 else ""
            raise InputError(f"no abstracts found in {where}: {report.skipped[0]}{more}")
        raise InputError(f"no abstracts found in {where}; a text file needs a header line, then abstracts "
                         "separated by blank lines, a .jsonl file one JSON object per line with an abstract")
    return ingest(papers, settings, rebuild=rebuild, progress=progress, sources=source_list(paths)), report


def retriever(settings: Settings, progress: Progress | None = None, on_rerank: Progress | None = None) -> Retriever:
    """``on_rerank(done, total)``: progress of a re-ranking (ASSISTANT_RERANK), ~0.5 s CPU per paper."""
    from assistant.search.retrieve import Retriever

    found = Retriever(open_index(settings, progress=progress), settings)
    found.on_rerank = on_rerank
    return found


def search(query: str, settings: Settings, k: int | None = None, progress: Progress | None = None,
           on_rerank: Progress | None = None) -> Retrieval:
    from assistant.qa.answer import retrieve

    return retrieve(retriever(settings, progress, on_rerank), query, k or max(settings.search.top_k, 10))


def ask(question: str, settings: Settings, on_token=None, progress: Progress | None = None,
        on_rerank: Progress | None = None) -> Answer:
    from assistant.qa.answer import answer_question

    return answer_question(retriever(settings, progress, on_rerank), question, settings, on_token=on_token)


def conversation(settings: Settings, progress: Progress | None = None, on_rerank: Progress | None = None,
                 previous: list[Answer] | None = None) -> Conversation:
    """A chat conversation; ``previous``: the answers of a saved one, resumed."""
    from assistant.chat.conversation import Conversation

    conv = Conversation(retriever(settings, progress, on_rerank), settings)
    conv.resume(previous or [])
    return conv


def chat_store(settings: Settings) -> ChatStore:
    """The saved conversations of this index."""
    from assistant.chat.history import ChatStore

    return ChatStore(settings.index.dir)


def check_save_target(path: Path, force: bool = False) -> str:
    """The format ``path`` would be saved in; refused (InputError) before any work when it cannot be."""
    from assistant.qa.export import check_target

    return check_target(path, force)


def save_answers(answers: list[Answer], path: Path, settings: Settings, force: bool = False) -> str:
    """Write answers as a .md transcript, .bib of cited papers or .json evidence record; the format written."""
    from assistant.qa.export import save
    from assistant.store.index import Index

    return save(path, answers, Index(settings).all_papers(), settings, force=force)


def storage_error(exc: BaseException, settings: Settings) -> AssistantError | None:
    """A storage library's exception (Chroma, SQLite, the file system) as our one-line error, or None."""
    from assistant.store.integrity import translate

    return translate(exc, settings)


def default_gate() -> float:
    """The relevance gate used when ASSISTANT_MIN_RELEVANCE is unset."""
    from assistant.search.retrieve import DEFAULT_GATE

    return DEFAULT_GATE


def list_papers(settings: Settings, progress: Progress | None = None) -> list[Paper]:
    return list(open_index(settings, progress=progress).all_papers().values())


def get_paper(paper_id: str, settings: Settings, progress: Progress | None = None) -> Paper:
    return open_index(settings, progress=progress).get_paper(paper_id)


def remove_papers(paper_ids: list[str], settings: Settings) -> list[str]:
    from assistant.store.ingest import remove

    return remove(paper_ids, settings)


def doctor(settings: Settings, repair: bool = False) -> dict:
    """Checks a user can read at a glance: config (key masked), index, embedder, LLM endpoint.
    ``repair``: first mend the index (repair.repair), listing what was done in ``report["repairs"]``."""
    import time

    report: dict = {"config": settings.public(), "checks": []}
    if repair:
        from assistant.errors import AssistantError
        from assistant.store.repair import repair as repair_fn

        try:
            report["repairs"], report["unrepaired"] = repair_fn(settings)
        except AssistantError as exc:
            report["repairs"], report["unrepaired"] = [], [str(exc)]

    def check(name: str, fn) -> None:
        started = time.perf_counter()
        try:
            detail = fn()
            report["checks"].append({"check": name, "ok": True, "detail": detail,
                                     "ms": round((time.perf_counter() - started) * 1000)})
        except Exception as exc:  # doctor reports every failure instead of stopping at the first
            from assistant.endpoint import scrub

            report["checks"].append({"check": name, "ok": False, "detail": scrub(str(exc), settings),
                                     "ms": round((time.perf_counter() - started) * 1000)})

    def index_check():
        from assistant.store.integrity import translate
        from assistant.store.repair import inspect

        try:
            found = inspect(settings)
        except Exception as exc:  # a full disk, a lost server: the line the other commands print
            raise (translate(exc, settings) or exc) from None
        m = found["manifest"] or {}
        if found["problems"]:
            raise RuntimeError("; ".join(found["problems"]) + f"; fix with: {found['fix']}")
        derived = ", ".join(f"{k} {v}" for k, v in found["derived"].items())
        return f"{found['papers']} papers, {found['chunks']} chunks, embedder {m.get('embedder')} ({m.get('dim')}d) " \
               f"in {found['dir']}; consistent (commit {found['generation']}; {derived})"

    def embedder_check():
        from assistant.embed.embedder import embed_query
        from assistant.embed.embedders import get_embedder

        vec = embed_query(get_embedder(settings), "doctor check")
        return f"{settings.embed.embedder}: {vec.shape[0]} dimensions, model checksum verified"

    def llm_check():
        if not settings.llm_enabled:
            return "no LLM configured: answers are extractive (set OPENAI_API_KEY or OPENAI_BASE_URL)"
        from assistant.endpoint import make_client, map_error

        client = make_client(settings).with_options(max_retries=0, timeout=min(settings.llm.timeout, 10))
        try:
            models = [m.id for m in client.models.list()]
        except Exception as exc:
            raise map_error(exc, settings) from exc
        where = settings.llm.base_url or "https://api.openai.com/v1"
        note = "" if not models or settings.llm.model in models else f"; model {settings.llm.model!r} is not listed there"
        return f"{where} reachable, {len(models)} models{note}"

    def rerank_check():
        from assistant.search.rerank import INSTALL, model_path, reranker, smollm2_path

        if settings.search.rerank == "off":
            if smollm2_path() is None:
                return f"off: SmolLM2's weights are not installed ({INSTALL} re-ranks close calls; see the " \
                       "README's Re-ranking)"
            return "off (ASSISTANT_RERANK=off)"

        value = reranker(settings.search.rerank).score("doctor check?", "A passage.")
        return f"{model_path(settings.search.rerank)} loaded (depth {settings.search.rerank_depth}, margin " \
               f"{settings.search.rerank_margin}; check score {value:.2f})"

    check("index", index_check)
    check("embedder", embedder_check)
    check("llm", llm_check)
    check("rerank", rerank_check)
    report["ok"] = all(c["ok"] for c in report["checks"])
    return report


def which(criterion: str, settings: Settings, progress: Progress | None = None):
    from assistant.qa.synthesis import which as which_fn

    return which_fn(retriever(settings, progress), criterion, settings)


def summarize(area: str, settings: Settings, progress: Progress | None = None):
    from assistant.qa.synthesis import summarize as summarize_fn

    return summarize_fn(retriever(settings, progress), area, settings)


def corpus_map(query: str | None, settings: Settings, out: Path | None = None, method: str = "tsne",
               progress: Progress | None = None, busy=None):
    """Lay out the index (cached per index version), highlight the query's papers, write HTML or PNG.

    ``busy(message)``, if given, is a context manager shown while the map is laid out and drawn."""
    import contextlib

    from assistant.qa.landscape import build_map, check_out, default_out, write_map

    path = check_out(out or default_out(query))  # fail before any work
    found = retriever(settings, progress)  # may build the bundled index first, with its own progress bar
    with (busy or (lambda _: contextlib.nullcontext()))("Laying out the map (once per index version)…"):
        cmap = build_map(found, query, method)
        return cmap, write_map(cmap, path)
