"""``assistant mcp``: the corpus as a Model Context Protocol server over stdio, for agent tools.

The same answers as the CLI, from the same index and settings: ``ask`` cites only papers it retrieved and says
when the corpus has nothing; ``search``, ``show``, ``which``, ``summarize``; every paper as a resource
``paper://<id>`` (the id percent-encoded: ``#`` is ``%23``). Read-only: nothing here writes the index.

Each tool's result is structured content (the fields of the CLI's ``--json``) plus the same as readable text.
A failure (a bad argument, no index, a damaged one, an unreachable LLM) is an MCP error whose text is the CLI's
one line; nothing but protocol messages reaches stdout (the SDK points fd 1 at stderr while it serves), and the
index is opened by the first call. ``initialize`` is answered before the SDK is even imported
(:mod:`~assistant.cli.mcp_handshake`). One server answers many questions from one opened index (:class:`~assistant.service.api.Library`).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field

from assistant.cli.mcp_handshake import INSTRUCTIONS, NAME, Early, server_info


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class Hit(_Record):
    rank: int
    paper_id: str
    title: str
    score: float
    snippet: str


class SearchResult(_Record):
    query: str
    answerable: bool = Field(description="false: the corpus likely has no paper on exactly this")
    hits: list[Hit]


class Source(_Record):
    n: int = Field(description="the number the answer cites it by: [n]")
    paper_id: str
    title: str
    snippet: str
    uri: str = Field(description="the paper as a resource: paper://<id>")


class Related(_Record):
    paper_id: str
    title: str
    uri: str


class PartPapers(_Record):
    part: str = Field(description="the words of the question naming this part")
    papers: list[Related] = Field(description="the papers on this part (not cited)")


class AskResult(_Record):
    question: str
    answer: str = Field(description="the answer, each claim followed by [n] citing sources[n-1]")
    answerable: bool = Field(description="false: the corpus has no paper on this; answer says so, cites nothing")
    unsure: bool = Field(description="answered, but likelier than not that no paper is on exactly this")
    mode: str = Field(description="llm (written by the configured model) or extractive (verbatim sentences)")
    citations: list[Source] = Field(description="the sources the answer cites")
    sources: list[Source] = Field(description="every source the answer was given")
    related: list[Related] = Field(description="on a refusal, the nearest papers (not on this; not cited)")
    parts: list[PartPapers] = Field(default=[], description="on a refusal of two things the corpus holds only "
                                                            "apart, each part and its papers (none is on both)")
    complete: bool = True
    uncited: bool = Field(default=False, description="an LLM answer citing none of its sources: nothing in it is "
                                                      "checked against an abstract (see quoted)")
    quoted: str = Field(default="", description="with uncited: what the sources say, quoted verbatim, each "
                                                "sentence citing [n] of sources")
    invalid_citations: list[int | str] = Field(default=[], description="markers in answer that name no source, "
                                                                       "shown there as [n?]; they cite nothing")


class PaperResult(_Record):
    paper_id: str
    title: str
    abstract: str
    authors: list[str]
    url: str | None
    date: str | None
    source: str
    uri: str


class Evidence(_Record):
    paper_id: str
    title: str
    evidence: str = Field(description="the paper's sentence that shows it")
    uri: str


class WhichResult(_Record):
    criterion: str
    count: int
    mode: str
    unsure: bool
    papers: list[Evidence]
    name: str | None = Field(default=None, description="the name the criterion is about, when the papers listed are "
                                                       "those that write it (\"evaluated on ImageNet\")")
    parts: list[PartPapers] = Field(default=[], description="a criterion joining things the corpus holds only "
                                                            "apart (no paper listed): each part and its papers")


class Theme(_Record):
    label: str
    papers: list[Evidence]


class SummaryResult(_Record):
    area: str
    mode: str
    unsure: bool
    answer: str = Field(description="an overview, each line citing [n]")
    themes: list[Theme]
    citations: list[Source]


def paper_uri(paper_id: str) -> str:
    return "paper://" + quote(paper_id, safe="")


def _stderr_progress(done: int, total: int) -> None:
    """The first call may build the default index (~20 s): progress on stderr, a line per tenth."""
    if total and (done == total or done * 10 // total != (done - 1) * 10 // total):
        print(f"assistant: building the index {done}/{total}", file=sys.stderr, flush=True)


def guarded(settings, call, error):
    """Run ``call``; any failure as ``error`` (the SDK's ToolError or ResourceError) carrying the CLI's one line,
    secrets scrubbed. ``settings``: a function giving the settings (read on first use: see :class:`Lazy`)."""
    from assistant.errors import AssistantError
    from assistant.service.api import pointed, scrubbed, storage_error

    try:
        return call()
    except AssistantError as exc:
        line = str(exc)
    except Exception as exc:  # a storage library's own error: the line the CLI would print, else its type
        known = storage_error(exc, settings())
        line = str(known) if known else f"{type(exc).__name__}: {exc}"
    try:
        line = pointed(scrubbed(line, settings()), settings())  # advice names the index the server was given
    except AssistantError:  # the settings themselves are what failed: their line names no secret
        pass
    raise error(line) from None


class Lazy:
    """The :class:`~assistant.service.api.Library` of settings read on first use: until a tool is called, neither
    the settings (pydantic-settings, ~0.15 s CPU) nor the index are loaded, so ``initialize`` is answered at once;
    a bad setting is then the call's error, in the CLI's words."""

    def __init__(self, make_settings):
        import threading

        self.make_settings = make_settings
        self._library = None
        self._settings = None
        self._lock = threading.Lock()

    def settings(self):
        with self._lock:
            if self._settings is None:
                self._settings = self.make_settings()
            return self._settings

    def __getattr__(self, name: str):
        settings = self.settings()
        with self._lock:
            if self._library is None:
                from assistant.service.api import Library

                self._library = Library(settings, progress=_stderr_progress)
        return getattr(self._library, name)


def corpus_server(library: Lazy, early: Early):
    """An MCPServer whose failures are the CLI's lines, whose resources are the index's papers, and which serves
    stdio from the client's first line, already read (``early``)."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.types import Resource

    class CorpusServer(MCPServer):
        async def call_tool(self, name, arguments, context=None):
            """A failure is the CLI's one line, as it is: the SDK's "Error executing tool X:" prefix dropped, and
            arguments that fail the schema said in one line per field ("question: String should have at least 1
            character"), not pydantic's report."""
            from pydantic import ValidationError

            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(cause, ValidationError):
                    raise ToolError(validation_line(name, cause)) from None
                if isinstance(cause, ToolError):
                    raise ToolError(str(cause)) from None
                raise

        async def list_resources(self):
            import anyio.to_thread

            papers = await anyio.to_thread.run_sync(lambda: guarded(library.settings, library.papers, ResourceError))
            return [Resource(uri=paper_uri(p.id), name=p.id, title=p.display_title, mime_type="application/json",
                             description=p.abstract[:200]) for p in papers]

        async def run_stdio_async(self):
            from mcp.server.stdio import stdio_server

            from assistant.cli.mcp_handshake import spliced

            async with stdio_server() as (read, write):
                await spliced(self._lowlevel_server, read, write, early)

    return CorpusServer(NAME, version=server_info()["version"], instructions=INSTRUCTIONS, log_level="WARNING")


def build(make_settings, early: Early = Early()):
    """The MCP server over the index of the settings ``make_settings()`` gives (read, and the index opened, by the
    first tool call); ``early``: what was read of stdin, and answered, before the SDK was imported."""
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.types import CallToolResult, TextContent

    library = Lazy(make_settings)
    server = corpus_server(library, early)

    def run(call, error=ToolError):
        return guarded(library.settings, call, error)

    def result(record: _Record, text: str) -> Any:
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=record.model_dump(mode="json"))

    @server.tool(description="Rank the corpus's papers for a query (hybrid dense + BM25), each with its best snippet.")
    def search(query: Annotated[str, Field(min_length=1, description="what to look for")],
               k: Annotated[int, Field(ge=1, le=50, strict=True, description="how many papers")] = 10) -> SearchResult:
        found = run(lambda: library.search(query, k))
        record = SearchResult(query=query, answerable=found.answerable, hits=[
            Hit(rank=h.rank, paper_id=h.paper_id, title=h.title, score=round(h.score, 4), snippet=h.snippet)
            for h in found.hits])
        return result(record, render_search(record))

    @server.tool(description="Answer a question from the abstracts with [n] citations, or say the corpus has no "
                             "paper on it (answerable false). Written by the configured LLM, else extractive.")
    def ask(question: Annotated[str, Field(min_length=1, description="the question")]) -> AskResult:
        record = ask_record(run(lambda: library.ask(question)))
        return result(record, render_answer(record))

    @server.tool(description="One paper, by its id, a name only it has (e.g. Qronos) or a part of one title.")
    def show(paper: Annotated[str, Field(min_length=1, description="id, name or part of the title")]) -> PaperResult:
        record = paper_record(run(lambda: library.paper(paper)))
        return result(record, render_paper(record))

    @server.tool(description="Every paper of the corpus meeting a criterion, each with the sentence that shows it.")
    def which(criterion: Annotated[str, Field(min_length=1, description="e.g. use reinforcement learning")]
              ) -> WhichResult:
        found = run(lambda: library.which(criterion))
        record = WhichResult(criterion=criterion, count=len(found.papers), mode=found.mode, unsure=found.unsure,
                             papers=[_evidence(f) for f in found.papers], name=found.name,
                             parts=[_part(p) for p in found.parts])
        return result(record, render_which(record))

    @server.tool(description="An area of the corpus: its papers grouped into themes, with a cited overview.")
    def summarize(area: Annotated[str, Field(min_length=1, description="e.g. federated learning")]) -> SummaryResult:
        found = run(lambda: library.summarize(area))
        record = SummaryResult(area=area, mode=found.mode, unsure=found.unsure, answer=found.answer,
                               themes=[Theme(label=t.label, papers=[_evidence(f) for f in t.papers])
                                       for t in found.themes],
                               citations=[_source(c) for c in found.citations])
        return result(record, render_summary(record))

    @server.resource("paper://{paper_id}", name="paper", mime_type="application/json",
                     description="A paper of the corpus: title, abstract and metadata (the id percent-encoded).")
    def paper_resource(paper_id: str) -> str:
        record = paper_record(run(lambda: library.paper(unquote(paper_id)), ResourceError))
        return record.model_dump_json()

    return server


def validation_line(tool: str, exc) -> str:
    """Arguments that fail a tool's schema, in one line naming each field and what it takes."""
    said = "; ".join(f"{'.'.join(str(part) for part in err['loc']) or 'arguments'}: {err['msg']}"
                     for err in exc.errors(include_url=False))
    return f"bad arguments to {tool}: {said}"


def _source(c) -> Source:
    return Source(n=c.n, paper_id=c.paper_id, title=c.title, snippet=c.snippet, uri=paper_uri(c.paper_id))


def _evidence(f) -> Evidence:
    return Evidence(paper_id=f.paper_id, title=f.title, evidence=f.evidence, uri=paper_uri(f.paper_id))


def _part(part) -> PartPapers:
    return PartPapers(part=part.text, papers=[Related(paper_id=pid, title=title, uri=paper_uri(pid))
                                              for pid, title in zip(part.papers, part.titles)])


def ask_record(answer) -> AskResult:
    sources = [Source(n=n, paper_id=h.paper_id, title=h.title, snippet=h.snippet, uri=paper_uri(h.paper_id))
               for n, h in enumerate(answer.sources, 1)]
    return AskResult(question=answer.question, answer=answer.text, answerable=answer.answerable,
                     unsure=bool(answer.unsure), mode=answer.mode, citations=[_source(c) for c in answer.citations],
                     sources=sources if answer.answerable else [],
                     related=[Related(paper_id=h.paper_id, title=h.title, uri=paper_uri(h.paper_id))
                              for h in (answer.related or [])] if not answer.answerable else [],
                     parts=[_part(p) for p in answer.parts],
                     complete=answer.complete,
                     uncited=answer.mode == "llm" and answer.answerable and not answer.citations,
                     quoted=answer.quoted if answer.answerable and not answer.citations else "",
                     invalid_citations=list(answer.invalid_citations))


def paper_record(p) -> PaperResult:
    return PaperResult(paper_id=p.id, title=p.display_title, abstract=p.abstract, authors=list(p.authors),
                       url=p.url, date=p.date, source=p.source, uri=paper_uri(p.id))


def render_search(r: SearchResult) -> str:
    head = "" if r.answerable else "The corpus may have no paper on exactly this; the nearest:\n"
    return head + "\n".join(f"{h.rank}. {h.paper_id} ({h.score:.3f}) {h.title}\n   {h.snippet}" for h in r.hits)


def _part_lines(parts: list[PartPapers]) -> list[str]:
    """Each part of a question held only apart, with its papers, one line each."""
    return [line for part in parts
            for line in [f"On \u201c{part.part}\u201d:", *(f"- {p.paper_id}: {p.title}" for p in part.papers)]]


def render_answer(r: AskResult) -> str:
    lines = [r.answer]
    if r.invalid_citations:
        marks = ", ".join(f"[{n}]" for n in r.invalid_citations)
        lines += ["", f"Note: {marks} in the answer name no source it was given: marked [n?], they cite nothing."]
    if r.citations:
        lines += ["", "Sources"] + [f"[{c.n}] {c.paper_id}: {c.title}\n    \"{c.snippet}\"" for c in r.citations]
    elif r.uncited:
        lines += ["", f"The model cited none of the {len(r.sources)} sources it was given: nothing above is checked "
                      "against an abstract. They were:"] + [f"[{c.n}] {c.paper_id}: {c.title}" for c in r.sources]
        if r.quoted:
            lines += ["", "What they say, quoted without the model (verbatim, cited):", r.quoted]
    if r.parts:
        lines += ["", "Papers on each part (none is on both; not cited):", *_part_lines(r.parts)]
    elif r.related:
        lines += ["", "Nearest papers (not on exactly this; not cited):"] + \
                 [f"- {p.paper_id}: {p.title}" for p in r.related]
    return "\n".join(lines)


def render_paper(r: PaperResult) -> str:
    meta = ", ".join(x for x in (", ".join(r.authors), r.date or "", r.url or "") if x)
    return f"{r.paper_id}: {r.title}\n{meta}\n\n{r.abstract}".replace("\n\n\n", "\n\n")


def render_which(r: WhichResult) -> str:
    if not r.papers:
        return f"No paper of the corpus writes {r.name} ({r.criterion})" if r.name else \
            "\n".join([f"No paper of the corpus meets: {r.criterion}",
                       *(["Papers on each part (none is on both):", *_part_lines(r.parts)] if r.parts else [])])
    return f"{r.count} papers meet: {r.criterion}\n" + "\n".join(
        f"- {p.paper_id}: {p.title}\n  \"{p.evidence}\"" for p in r.papers)


def render_summary(r: SummaryResult) -> str:
    themes = "\n".join(f"{t.label}: " + "; ".join(p.paper_id for p in t.papers) for t in r.themes)
    cited = "\n".join(f"[{c.n}] {c.paper_id}: {c.title}" for c in r.citations)
    return "\n\n".join(x for x in (r.answer, themes, cited) if x)


def serve(make_settings, early: Early = Early()) -> None:
    """Serve over stdio until the client closes it (``make_settings()``: the settings, read by the first call;
    ``early``: see :func:`build`)."""
    build(make_settings, early).run("stdio")
