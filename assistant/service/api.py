"""The service layer: one function per user action, and what the terminal needs to show corpus and model text
safely. The CLI imports nothing else of the package."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.config import Settings
from assistant.prompts import CHECK_CLAIMS, EXTRACTIVE_LABEL, UNSURE_NOTE, invalid_citations_note
from assistant.text.corpus import Paper, ParseReport, load_papers
from assistant.text.english import ADVISABLE
from assistant.text.latex import readable
from assistant.text.safetext import clip, for_terminal, json_for_terminal, text_of, typed
from assistant.store.index import Progress
from assistant.store.opening import open_index

__all__ = [
    "ingest_paths", "retriever", "search", "ask", "conversation", "chat_store", "list_papers", "get_paper", "Library",
    "remove_papers", "doctor", "which", "summarize", "corpus_map", "check_save_target", "save_answers",
    "storage_error", "scrubbed", "require_words", "require_positive", "require_topic", "checked_criterion", "pointed",
    # for showing corpus and model text: LaTeX made readable, made inert for a terminal, cut at a word
    "EXTRACTIVE_LABEL", "UNSURE_NOTE", "CHECK_CLAIMS", "invalid_citations_note", "readable", "for_terminal",
    "json_for_terminal", "clip", "text_of",
]

if TYPE_CHECKING:  # imported where used: `papers` and `show` need none of them (~0.3 s CPU)
    from assistant.store.ingest import IngestReport
    from assistant.chat.history import ChatStore
    from assistant.chat.conversation import Conversation
    from assistant.errors import AssistantError
    from assistant.qa.answer import Answer
    from assistant.search.retrieve import Retrieval, Retriever


#: Fullwidth ASCII (what CJK input methods type: "ＡＳＩＤＥ？") and the ideographic space, as plain ASCII.
_FULLWIDTH = {**{cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)}, 0x3000: 0x20}


def require_words(text: str, what: str = "question") -> str:
    """``text`` as it is read (fullwidth letters, digits and marks as ASCII) when it holds a word or number to look
    for; otherwise InputError, before any work: "???", "  " or an emoji give a search, `which` or a summary nothing
    to read."""
    text = typed(text).translate(_FULLWIDTH)
    if not any(ch.isalnum() for ch in text):
        from assistant.errors import InputError

        raise InputError(f"the {what} has no words to look for; write what you want to find, e.g. "
                         "\"federated learning\"")
    return text


#: A command a message tells the user to run on the index ("restore it with: assistant doctor --repair").
_ADVISED = re.compile(r"\bassistant (?:" + "|".join(ADVISABLE) + r")\b")


def pointed(text: str, settings: Settings) -> str:
    """A message whose advised commands act on this index: for a Chroma server or an index directory other than the
    default one, it says to add --chroma-url / --index-dir (run as printed, "assistant doctor --repair" acts on the
    default local index)."""
    from assistant.config import is_default_dir, redact_urls

    advised = len(_ADVISED.findall(text))
    options = ([f"--chroma-url {shlex.quote(redact_urls(settings.index.chroma_url))}"] if settings.index.chroma_url
               else []) + ([] if is_default_dir(settings) else [f"--index-dir {shlex.quote(str(settings.index.dir))}"])
    if not advised or not options:
        return text
    return f"{text} (add {' '.join(options)} to {'each' if advised > 1 else 'that'} command)"


def require_positive(criterion: str) -> str:
    """``criterion`` when it asks for what papers do; InputError when it asks for what they do not: `which` finds
    papers by what they say they do, and would list those that do ("papers that do not use neural networks")."""
    from assistant.text.english import NEGATED_CRITERION

    if NEGATED_CRITERION.search(criterion):
        from assistant.errors import InputError

        raise InputError(f"`which` finds papers by what they say they do, so it cannot leave out those that do "
                         f"something ({criterion!r}); ask for what they do (without the \"not\" or \"except\" part) "
                         "and read the papers it leaves out")
    return criterion


def require_topic(criterion: str) -> str:
    """``criterion`` when it names something papers do or are about; InputError when it is only framing ("how many
    papers", "papers"), which listed two arbitrary papers or "0 papers match how many papers"."""
    from assistant.qa.synthesis import strip_leadin
    from assistant.search.decide import framing_terms
    from assistant.text.english import LISTING_WORDS
    from assistant.text.terms import stem_terms

    if not set(stem_terms(strip_leadin(criterion))) - framing_terms() - set(stem_terms(" ".join(LISTING_WORDS))):
        from assistant.errors import InputError

        raise InputError(f"the criterion {criterion!r} names nothing papers do or are about; say what to look for, "
                         "e.g. \"how many papers propose a benchmark\"")
    return criterion


def checked_criterion(criterion: str) -> str:
    """A `which` criterion as it is read, or InputError: no words, what papers do not do, or framing only."""
    return require_topic(require_positive(require_words(criterion, "criterion")))


def ingest_paths(paths: list[Path] | None, settings: Settings, rebuild: bool = False, strict: bool = False,
                 progress: Progress | None = None) -> tuple[IngestReport, ParseReport]:
    """Parse everything first (so a bad file changes nothing), then write the index. ``--rebuild``
    without paths re-reads the sources the manifest records, never silently the bundled corpus."""
    from assistant.store.ingest import ingest, rebuild_sources
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
    if rebuild and report.partial:  # a rebuild holds only what it reads: the skipped records' papers would go
        from assistant.errors import InputError

        raise InputError(f"{len(report.partial)} file(s) have records that could not be read (first: "
                         f"{report.skipped[0] if report.skipped else '?'}); ingest --rebuild builds the index from "
                         "what it reads and would lose their papers: fix them first, or ingest without --rebuild "
                         "(which keeps the papers it could not read)")
    return ingest(papers, settings, rebuild=rebuild, progress=progress, sources=source_list(paths),
                  partial=frozenset(report.partial)), report


def retriever(settings: Settings, progress: Progress | None = None, on_rerank: Progress | None = None) -> Retriever:
    """``on_rerank(done, total)``: progress of a re-ranking (ASSISTANT_RERANK), ~0.5 s CPU per paper."""
    from assistant.search.retrieve import Retriever

    found = Retriever(open_index(settings, progress=progress), settings)
    found.on_rerank = on_rerank
    return found


def search(query: str, settings: Settings, k: int | None = None, progress: Progress | None = None,
           on_rerank: Progress | None = None) -> Retrieval:
    from assistant.qa.answer import retrieve

    query = require_words(query, "query")
    return retrieve(retriever(settings, progress, on_rerank), query, k or max(settings.search.top_k, 10))


def ask(question: str, settings: Settings, on_token=None, progress: Progress | None = None,
        on_rerank: Progress | None = None) -> Answer:
    from assistant.qa.answer import answer_question

    question = require_words(question)
    return answer_question(retriever(settings, progress, on_rerank), question, settings, on_token=on_token)


def conversation(settings: Settings, progress: Progress | None = None, on_rerank: Progress | None = None,
                 previous: list[Answer] | None = None) -> Conversation:
    """A chat conversation; ``previous``: the answers of a saved one, resumed."""
    from assistant.chat.conversation import Conversation

    conv = Conversation(retriever(settings, progress, on_rerank), settings)
    conv.resume(previous or [])
    return conv


class Library:
    """An index opened once for many questions (an MCP server, a notebook): the same answers as :func:`ask`,
    :func:`search`, :func:`which`, :func:`summarize` and :func:`get_paper`, without reading the index again for
    each. Every search first follows what another process committed (``Index.follow``). One question at a time:
    calls from several threads wait for each other. An index that cannot be opened raises on each call (its
    one-line error), and is tried again by the next."""

    def __init__(self, settings: Settings, progress: Progress | None = None):
        import threading

        self.settings = settings
        self.progress = progress
        self._retriever: Retriever | None = None
        self._lock = threading.RLock()

    @property
    def retriever(self) -> Retriever:
        with self._lock:
            if self._retriever is None:
                self._retriever = retriever(self.settings, self.progress)
            return self._retriever

    def search(self, query: str, k: int = 10) -> Retrieval:
        from assistant.qa.answer import retrieve

        query = require_words(query, "query")
        with self._lock:
            return retrieve(self.retriever, query, k)

    def ask(self, question: str) -> Answer:
        from assistant.qa.answer import answer_question

        question = require_words(question)
        with self._lock:
            return answer_question(self.retriever, question, self.settings)

    def which(self, criterion: str):
        from assistant.qa.synthesis import which as which_fn

        criterion = checked_criterion(criterion)
        with self._lock:
            return which_fn(self.retriever, criterion, self.settings)

    def summarize(self, area: str):
        from assistant.qa.synthesis import summarize as summarize_fn

        area = require_words(area, "area")
        with self._lock:
            return summarize_fn(self.retriever, area, self.settings)

    def paper(self, ref: str) -> Paper:
        from assistant.search.names import resolve_paper

        with self._lock:
            index = self.retriever.index
            index.follow()
            return index.get_paper(resolve_paper(index, ref))

    def papers(self) -> list[Paper]:
        with self._lock:
            index = self.retriever.index
            index.follow()
            return list(index.all_papers().values())


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
    from assistant.store.faults import translate

    return translate(exc, settings)


def scrubbed(text: str, settings: Settings) -> str:
    """``text`` with no secret in it: the API key, any run of it a server echoed, a URL's credentials."""
    from assistant.endpoint import scrub

    return scrub(text, settings, limit=None)


def list_papers(settings: Settings, progress: Progress | None = None) -> list[Paper]:
    return list(open_index(settings, progress=progress).all_papers().values())


def get_paper(ref: str, settings: Settings, progress: Progress | None = None) -> Paper:
    """A paper by its id, a name only it has ("Qronos") or a part of one title only (InputError listing the
    candidates when several match)."""
    from assistant.search.names import resolve_paper

    index = open_index(settings, progress=progress)
    return index.get_paper(resolve_paper(index, ref))


def remove_papers(refs: list[str], settings: Settings) -> list[str]:
    """Remove papers named by id, name or a part of one title (as :func:`get_paper` resolves them)."""
    from assistant.search.names import resolve_paper
    from assistant.store.ingest import remove

    index = open_index(settings, build_default=False)
    return remove(list(dict.fromkeys(resolve_paper(index, ref) for ref in refs)), settings)


def doctor(settings: Settings, repair: bool = False) -> dict:
    """Checks a user can read at a glance: config (key masked), index, embedder, LLM endpoint, re-ranker.
    ``repair``: first mend the index (repair.repair), listing what was done in ``report["repairs"]``."""
    from assistant.service.doctor import doctor as doctor_fn

    return doctor_fn(settings, repair)


def which(criterion: str, settings: Settings, progress: Progress | None = None):
    from assistant.qa.synthesis import which as which_fn

    criterion = checked_criterion(criterion)
    return which_fn(retriever(settings, progress), criterion, settings)


def summarize(area: str, settings: Settings, progress: Progress | None = None, on_token=None):
    """An area's overview; with an LLM, its synthesis streamed to ``on_token`` when given."""
    from assistant.qa.synthesis import summarize as summarize_fn

    area = require_words(area, "area")
    return summarize_fn(retriever(settings, progress), area, settings, on_token=on_token)


def corpus_map(query: str | None, settings: Settings, out: Path | None = None, method: str = "tsne",
               progress: Progress | None = None, busy=None, force: bool = False):
    """Lay out the index (cached per index version), highlight the query's papers, write HTML or PNG.

    ``busy(message)``, if given, is a context manager shown while the map is laid out and drawn."""
    import contextlib

    from assistant.qa.landscape import build_map, check_out, default_out, write_map

    if query is not None:
        query = require_words(query, "query")
    path = check_out(out or default_out(query), force)  # fail before any work
    found = retriever(settings, progress)  # may build the bundled index first, with its own progress bar
    with (busy or (lambda _: contextlib.nullcontext()))("Laying out the map (once per index version)…"):
        cmap = build_map(found, query, method)
        return cmap, write_map(cmap, path, force)
