"""The ``assistant`` command line: each command parses, calls one library function, renders.

Nothing heavy (llama-index, chromadb, onnxruntime, openai) is imported at module level, so
``assistant --help`` and argument errors are instant.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from assistant.errors import AssistantError, LLMError

if TYPE_CHECKING:
    from rich.console import Console

app = typer.Typer(
    name="assistant",
    help="Ask questions about a corpus of paper abstracts and get answers with cited snippets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals hold the API key
    rich_markup_mode=None,  # plain click help: typer.rich_utils would add ~0.1 s to every --help and usage error
)


class _LazyConsole:
    """A rich Console made on first use: importing rich.console costs ~50 ms that --help never needs."""

    def __init__(self, **options):
        self._options = options
        self._console = None

    @property
    def real(self):
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name):
        return getattr(self.real, name)


def escape(text: str, one_line: bool = False) -> str:
    """Any string not written here, for a rich markup template: made inert for the terminal (controls shown,
    bidi and zero-width characters dropped: safetext.for_terminal), then escaped so that no ``[`` in it is
    read as markup. Every user, corpus or model string printed goes through this or :func:`shown`."""
    from rich.markup import escape as rich_escape

    from assistant.text.safetext import for_terminal

    return rich_escape(for_terminal(text, one_line=one_line))


def shown(text: str, one_line: bool = False) -> str:
    """Abstract text for the terminal: its LaTeX as plain Unicode (``86.2\\%`` -> ``86.2%``), then as
    :func:`escape`. --json keeps the text verbatim."""
    from assistant.text.corpus import readable

    return escape(readable(text), one_line=one_line)


def _linked(label: str, target: str | None, style: str = ""):
    """``label`` as rich Text, a terminal hyperlink to ``target`` when that is a plain http(s) or file URL.
    Built as a style, never as ``[link=...]`` markup: a ``]`` or ``[0]`` in a URL or path broke that."""
    import re

    from rich.style import Style
    from rich.text import Text

    from assistant.text.safetext import for_terminal

    text = Text(for_terminal(label, one_line=True), style=style)
    # printable ASCII only: nothing in the target can end the OSC 8 sequence it is sent in
    if target and re.fullmatch(r"(?:https?|file)://[\x21-\x7e]+", target):
        text.stylize(Style(link=target))
    return text


out = _LazyConsole(highlight=False, soft_wrap=False)
# soft_wrap: an error or report line is one line however narrow the terminal (or 80 columns when piped)
err = _LazyConsole(stderr=True, highlight=False, soft_wrap=True)

IndexDir = Annotated[Optional[Path], typer.Option("--index-dir", help="Index directory [env: ASSISTANT_INDEX_DIR]",
                                                  show_default=False)]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


# Options given before the command, set afresh by the callback on every invocation. A module dict rather than
# ctx.obj: typer vendors its own click, whose get_current_context is private, and reading ctx.obj would mean
# a ctx parameter on every command.
_GLOBAL: dict = {}


@app.callback()
def _global_options(
    chroma_url: Annotated[Optional[str], typer.Option("--chroma-url", help="Use a Chroma server, e.g. "
                                                      "http://127.0.0.1:8000 [env: ASSISTANT_CHROMA_URL]",
                                                      show_default=False)] = None,
    index_dir: IndexDir = None,
):
    # so `assistant --index-dir X ask ...` works as `assistant ask ... --index-dir X` does
    _GLOBAL.clear()
    _GLOBAL.update(chroma_url=chroma_url, index_dir=index_dir)


def _settings(index_dir: Path | None = None, **overrides):
    """Settings from the environment and the options: a command's own --index-dir wins over the global one."""
    from assistant.config import Settings

    index_dir = index_dir if index_dir is not None else _GLOBAL.get("index_dir")
    return Settings.from_env(index_dir=index_dir, chroma_url=_GLOBAL.get("chroma_url"), **overrides)


def handle_errors(fn):
    """Translate AssistantError into one line on stderr and its exit code (tracebacks with ASSISTANT_DEBUG=1)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AssistantError as exc:
            if os.environ.get("ASSISTANT_DEBUG"):
                raise
            err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err.print("Interrupted.")
            raise typer.Exit(130) from None
        except OSError as exc:  # the file system said no (permissions, a full disk): the user's to fix, in one line
            if os.environ.get("ASSISTANT_DEBUG"):
                raise
            known = _storage_error(exc, kwargs.get("index_dir"))
            where = f": {exc.filename}" if exc.filename else ""
            err.print(f"[bold red]Error:[/] {escape(str(known) if known else (exc.strerror or str(exc)) + where, one_line=True)}")
            raise typer.Exit(known.exit_code if known else 1) from None
        except Exception as exc:  # a storage library's own error (Chroma, its HTTP client, SQLite): one line too
            known = _storage_error(exc, kwargs.get("index_dir"))
            if known is None or os.environ.get("ASSISTANT_DEBUG"):
                raise
            err.print(f"[bold red]Error:[/] {escape(str(known), one_line=True)}")
            raise typer.Exit(known.exit_code) from None

    return wrapper


def _storage_error(exc: BaseException, index_dir: Path | None = None):
    """integrity.translate with this command's settings (None when the error is not a storage fault)."""
    from assistant.store.integrity import translate

    try:
        settings = _settings(index_dir)
    except Exception:  # the settings themselves are bad: not a storage fault
        return None
    return translate(exc, settings)


class _BuildProgress:
    """A rich progress bar for embedding papers, shown only when work happens."""

    def __init__(self, label: str = "Embedding papers", transient: bool = False):
        self.label = escape(label, one_line=True)  # a progress column reads markup: "Evaluating q[1].jsonl"
        self.transient = transient
        self.progress = None
        self.task = None
        self.finished = False

    def __call__(self, done: int, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        if self.finished and done >= total:  # the ingest reports its last group twice: one bar, not two
            return
        if self.progress is None:
            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeRemainingColumn(), console=getattr(err, "real", err), transient=self.transient)
            self.progress.start()
            self.task = self.progress.add_task(self.label, total=total)
        self.progress.update(self.task, completed=done, total=total)
        self.finished = done >= total
        if self.finished:
            self.close()

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _rerank_progress():
    """Progress bar for re-ranking (ASSISTANT_RERANK), ~0.35-1 s per paper on 2 cores; shown before the first
    paper is read, gone when done."""
    return _BuildProgress("Re-ranking a close call (ASSISTANT_RERANK)", transient=True)


def _eval_progress(name: str):
    """Progress bar over an eval's questions: a re-ranked one takes ~8 s, so a long file can take minutes."""
    return _BuildProgress(f"Evaluating {name}", transient=True)


def _first_run_progress():
    """Progress bar used when a command has to build the default index first."""
    return _BuildProgress("Building the index from the bundled ICLR 2026 corpus (first run only)")


def _print_json(data, indent: int | None = 2) -> None:
    """JSON on stdout: strings verbatim, with controls, bidi and zero-width characters as \\u escapes."""
    from assistant.text.safetext import json_for_terminal

    sys.stdout.write(json_for_terminal(data, indent=indent) + "\n")


def _print_read_as(mended: str | None, console: Console | None = None) -> None:
    """How a question or criterion with typos was read (Retriever.mend), when it had any."""
    if mended:
        (console or out).print(f"[dim]Read as: {escape(mended)}[/]")


def render_sources(answer, console: Console | None = None) -> None:
    console = console or out
    if not answer.citations and answer.mode == "llm" and answer.answerable and answer.sources:
        # The promise is that every claim points at an abstract: an answer citing none must say so.
        given = "the only source" if len(answer.sources) == 1 else f"the {len(answer.sources)} sources"
        console.print(f"\n[yellow]The model cited none of {given} it was given: nothing "
                      "above is checked against an abstract. They were:[/]")
        for n, h in enumerate(answer.sources, 1):
            _print_paper(f"[{n}]", h.paper_id, h.title, None, console)
        if answer.quoted:
            console.print("\n[dim italic]What they say, quoted without the model (verbatim, cited):[/]")
            console.print(shown(answer.quoted))
        return
    if not answer.citations:
        if not answer.answerable and answer.related:  # the nearest papers, never an answer
            console.print("[dim]Nearest papers (not on exactly this; not cited):[/]")
            for h in answer.related:
                _print_paper("-", h.paper_id, h.title, None, console)
        return
    console.print("\n[bold]Sources[/]")
    for c in answer.citations:
        _print_paper(f"[{c.n}]", c.paper_id, c.title, c.snippet, console)
    # Sources keep their retrieval numbers, so a gap in them ([2] [3] without [1]) needs saying: the
    # missing ones were retrieved and read but gave nothing the answer used.
    cited = {c.n for c in answer.citations}
    uncited = [f"[{n}] {h.paper_id}" for n, h in enumerate(answer.sources, 1) if n not in cited and n < max(cited)]
    if uncited:
        console.print(f"[dim]Also retrieved, not cited: {escape(', '.join(uncited))}[/]")


def _print_paper(label: str, paper_id: str, title: str, quote: str | None = None, console: Console | None = None):
    """One cited paper: label, id, title, and the quoted sentence or snippet."""
    console = console or out
    console.print(f"[bold cyan]{escape(label)}[/] [green]{escape(paper_id, one_line=True)}[/] — "
                  f"{shown(title, one_line=True)}")
    if quote:
        console.print(f"    [dim]“{shown(quote)}”[/]")


def render_answer(answer, streamed: bool = False, console: Console | None = None) -> None:
    from assistant.qa.answer import EXTRACTIVE_LABEL

    console = console or out
    _print_read_as(answer.read_as, console)
    if answer.mode == "extractive" and answer.answerable:
        console.print(f"[dim italic]{EXTRACTIVE_LABEL}[/]")
    if not streamed:
        console.print(shown(answer.text))
    elif answer.invalid_citations:
        console.print(f"[yellow]Note: citations {escape(', '.join(f'[{n}]' for n in answer.invalid_citations))} "
                      "do not match any source and were removed.[/]")
    if not answer.complete and streamed:
        # what llm_answer appended after the stream: cut at max_tokens, or the stream broke off
        console.print(f"[yellow]{escape(answer.text.rsplit(chr(10) * 2, 1)[-1])}[/]")
    weak = [s for s in answer.support if not s["supported"]]
    if weak:
        console.print("\n[yellow]Check these claims: their cited abstracts do not clearly support them[/]")
        for s in weak:
            console.print(f"[yellow]  ⚠ {shown(s['sentence'])}[/]")
    render_sources(answer, console)


def _markdown(text: str):
    """Model text as rich Markdown, made inert first; links shown with their URL, not hidden behind text."""
    from rich.markdown import Markdown

    from assistant.text.corpus import readable
    from assistant.text.safetext import for_terminal

    return Markdown(for_terminal(readable(text)), hyperlinks=False)


class _Stream:
    """Render streamed tokens: live Markdown in a terminal, line by line when piped (each line made inert and
    its LaTeX readable, which a lone token cannot be)."""

    def __init__(self):
        self.parts: list[str] = []
        self.live = None
        self.used = False
        self.pending = ""

    def __call__(self, token: str) -> None:
        self.used = True
        self.parts.append(token)
        if out.is_terminal:
            from rich.live import Live

            if self.live is None:
                self.live = Live(console=getattr(out, "real", out), refresh_per_second=12, vertical_overflow="visible")
                self.live.start()
            self.live.update(_markdown("".join(self.parts)))
        else:
            self.pending += token
            if "\n" in self.pending:
                done, self.pending = self.pending.rsplit("\n", 1)
                self._write(done + "\n")

    def _write(self, text: str) -> None:
        from assistant.text.corpus import readable
        from assistant.text.safetext import for_terminal

        sys.stdout.write(for_terminal(readable(text)))
        sys.stdout.flush()

    def close(self, final_text: str | None = None) -> None:
        if self.live is not None:
            if final_text is not None:  # the parsed text: unknown citations now marked [n?]
                self.live.update(_markdown(final_text))
            self.live.stop()
            self.live = None
        elif self.used:
            self._write(self.pending + "\n")
            self.pending = ""


def _streamer():
    return _Stream()


@app.command()
@handle_errors
def ingest(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Files or directories (.txt lists, .jsonl, .csv). "
                                                           "Default: the bundled ICLR 2026 corpus.")] = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Empty the index first (needed to change embedder).")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Fail on the first malformed record instead of skipping it.")] = False,
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Add abstracts to the index. Unchanged papers are skipped; changed ones are replaced."""
    from assistant.service.api import ingest_paths

    settings = _settings(index_dir)
    bar = _BuildProgress()
    try:
        report, parsed = ingest_paths(paths, settings, rebuild=rebuild, strict=strict, progress=bar)
    finally:
        bar.close()
    if as_json:
        _print_json({**report.as_dict(), "duplicates": [{"dropped": a, "kept": b} for a, b in parsed.duplicates],
                     "skipped": parsed.skipped, "index_dir": str(settings.index_dir)})
        return
    for source in report.dropped_sources:
        err.print(f"[yellow]replaced:[/] the index no longer holds the papers from {escape(source)}")
    for line in parsed.skipped:
        err.print(f"[yellow]skipped:[/] {escape(line)}")
    for dropped, kept in parsed.duplicates:
        err.print(f"[yellow]duplicate:[/] {escape(dropped)} has the same abstract as {escape(kept)}; stored once")
    chunks = f"{report.chunks} chunk{'' if report.chunks == 1 else 's'}"
    out.print(f"Indexed {len(report.added)} new, {len(report.updated)} updated, {len(report.unchanged)} unchanged "
              f"papers ({chunks}) in {report.seconds:.1f}s → {escape(settings.chroma_url or str(settings.index_dir))}")


@app.command()
@handle_errors
def ask(
    question: Annotated[str, typer.Argument(help="Your question.")],
    k: Annotated[Optional[int], typer.Option("-k", "--top-k", min=1, max=50, help="Papers to retrieve.")] = None,
    save: Annotated[Optional[Path], typer.Option("--save", help="Also write the answer to a .md transcript, "
                                                 ".bib of cited papers or .json evidence record.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Let --save overwrite an existing file.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show retrieval and token usage.")] = False,
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Answer a question with [n] citations and a Sources list."""
    from assistant.service.api import ask as ask_fn

    if not question.strip():
        raise typer.BadParameter("the question is empty")
    if save is not None:  # a wrong file name is refused before the answer is computed, not after
        from assistant.qa.export import check_target

        check_target(save, force)
    settings = _settings(index_dir, top_k=k)
    streaming = settings.llm_enabled and not as_json
    stream = _streamer() if streaming else None
    try:
        answer = ask_fn(question, settings, on_token=stream, progress=_first_run_progress(),
                        on_rerank=_rerank_progress())
    except BaseException:
        if stream:
            stream.close()
        raise
    if stream:
        stream.close(answer.text)
    if save is not None:
        _save([answer], save, settings, force)
    if as_json:
        _print_json(answer.as_dict())
        return
    render_answer(answer, streamed=bool(stream and stream.used))
    if verbose:
        _render_verbose(answer)


def _save(answers, path: Path, settings, force: bool = False) -> None:
    from assistant.qa.export import save as save_fn
    from assistant.store.index import Index

    fmt = save_fn(path, answers, Index(settings).all_papers(), settings, force=force)
    from rich.text import Text

    err.print(Text.assemble((f"Saved {fmt} to ", "dim"), _linked(str(path), path.resolve().as_uri())))


def _render_verbose(answer) -> None:
    err.print(f"[dim]retrieval query: {escape(answer.retrieval_query or answer.question)}[/]")
    for h in answer.retrieved or answer.sources:
        likely = f" likelihood={h.likelihood:.2f}" if h.likelihood is not None else ""
        err.print(f"[dim]  {h.rank:>2}. {escape(h.paper_id)} fused={h.score:.3f} dense={h.dense:.3f} bm25={h.bm25:.2f}"
                  f"{likely}[/]")
    if answer.usage:
        u = answer.usage
        err.print(f"[dim]tokens: prompt {u.get('prompt_tokens')}, completion {u.get('completion_tokens')}, "
                  f"total {u.get('total_tokens')} ({escape(str(answer.model))})"
                  + (f", about ${u['cost_usd']:.4f}" if u.get("cost_usd") is not None else ", cost unknown") + "[/]")


@app.command()
@handle_errors
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("-k", "--top-k", min=1, max=200, help="How many papers.")] = 10,
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Rank papers for a query (hybrid dense + BM25) and show each one's best snippet."""
    from assistant.service.api import search as search_fn
    from assistant.text.safetext import clip

    if not query.strip():
        raise typer.BadParameter("the query is empty")
    settings = _settings(index_dir)
    result = search_fn(query, settings, k=k, progress=_first_run_progress(), on_rerank=_rerank_progress())
    if as_json:
        _print_json({"query": query, "answerable": result.answerable, "hits": [h.as_dict() for h in result.hits]}
                    | ({"searched_for": result.query} if result.typed else {}))
        return
    if result.typed:
        out.print(f"[dim]Searched for: {escape(result.query)}[/]")
    from rich.table import Table

    table = Table(show_lines=False, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("paper", style="green", no_wrap=True)
    table.add_column("score", justify="right", width=6)
    table.add_column("title / snippet", ratio=1)
    for h in result.hits:
        table.add_row(str(h.rank), escape(h.paper_id), f"{h.score:.3f}",
                      f"[bold]{shown(h.title, one_line=True)}[/]\n[dim]{shown(clip(h.snippet, 240))}[/]")
    out.print(table)
    if not result.answerable:
        out.print("[yellow]None of these looks relevant enough to answer from.[/]")


@app.command()
@handle_errors
def papers(
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """List the papers in the index."""
    from assistant.service.api import list_papers

    items = list_papers(_settings(index_dir), progress=_first_run_progress())
    if as_json:
        _print_json([{"paper_id": p.id, "title": p.title, "source": p.source, "position": p.position,
                      "title_derived": p.title_derived, "display_title": p.display_title, "url": p.url,
                      "authors": list(p.authors)} for p in items])
        return
    from rich.table import Table

    table = Table(expand=True)
    table.add_column("paper", style="green", no_wrap=True)
    table.add_column("title", ratio=1)
    for p in items:
        table.add_row(escape(p.id, one_line=True), shown(p.display_title, one_line=True))
    out.print(table)
    out.print(f"{len(items)} papers")


@app.command()
@handle_errors
def show(
    paper_id: Annotated[str, typer.Argument(help="A paper id, e.g. 000_c647aebf503422f2#3")],
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Show one paper's full abstract and metadata."""
    from assistant.service.api import get_paper

    p = get_paper(paper_id, _settings(index_dir), progress=_first_run_progress())
    if as_json:
        _print_json({"paper_id": p.id, "title": p.title, "title_derived": p.title_derived,
                     "display_title": p.display_title, "abstract": p.abstract,
                     "source": p.source, "position": p.position, "authors": list(p.authors), "url": p.url,
                     "urls": list(p.urls), "date": p.date, "keywords": list(p.keywords)})
        return
    out.print(f"[bold]{shown(p.display_title, one_line=True)}[/]"
              + (" [dim](title derived from the abstract)[/]" if p.title_derived else ""))
    out.print(f"[green]{escape(p.id, one_line=True)}[/]  [dim]{escape(p.source, one_line=True)} #{p.position}[/]")
    if p.authors:
        out.print(shown(", ".join(p.authors), one_line=True))
    if p.url:
        out.print(_linked(p.url, p.url))
    out.print()
    out.print(shown(p.abstract))


@app.command()
@handle_errors
def which(
    criterion: Annotated[str, typer.Argument(help='e.g. "papers that study federated learning"')],
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Which / how many papers meet a criterion: checked against every paper, not just the top k."""
    from assistant.service.api import which as which_fn

    result = which_fn(criterion, _settings(index_dir), progress=_first_run_progress())
    if as_json:
        _print_json(result.as_dict())
        return
    _print_read_as(result.read_as)
    out.print(f"[bold]{len(result.papers)}[/] paper{'s' if len(result.papers) != 1 else ''} match "
              f"[italic]{escape(criterion)}[/]" + (" (judged by the LLM)" if result.mode == "llm" else ""))
    for i, f in enumerate(result.papers, 1):
        _print_paper(f"{i:>2}.", f.paper_id, f.title, f.evidence)


@app.command()
@handle_errors
def summarize(
    area: Annotated[str, typer.Argument(help='A research area, e.g. "federated learning"')],
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Overview of an area: its papers grouped into themes, each with its contribution, cited."""
    from assistant.service.api import summarize as summarize_fn

    summary = summarize_fn(area, _settings(index_dir), progress=_first_run_progress())
    if as_json:
        _print_json(summary.as_dict())
        return
    _print_read_as(summary.read_as)
    if summary.note:
        out.print(f"[yellow]{escape(summary.note)}[/]")
    elif summary.mode == "extractive" and summary.citations:
        out.print("[dim italic]Extractive overview (no LLM configured): verbatim sentences from the abstracts.[/]")
    out.print(_markdown(summary.answer))
    if summary.citations:
        out.print("\n[bold]Sources[/]")
        for c in summary.citations:
            _print_paper(f"[{c.n}]", c.paper_id, c.title)


@app.command("map")
@handle_errors
def map_cmd(
    query: Annotated[Optional[str], typer.Argument(help='Highlight and number the papers this retrieves, '
                                                   'e.g. "federated learning"', show_default=False)] = None,
    out_path: Annotated[Optional[Path], typer.Option("--out", "-o", help="map.html (interactive, self-contained) "
                                                     "or map.png (static)  [default: map.html or map-QUERY.html]",
                                                     show_default=False)] = None,
    method: Annotated[str, typer.Option("--layout", help="Projection: tsne (keeps neighbourhoods) or pca (fast)")]
    = "tsne",
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """A 2-D map of every paper, coloured by theme; with a QUERY its papers are numbered like citations."""
    from assistant.service.api import corpus_map

    busy = None if as_json else (lambda message: err.status(message, spinner="dots"))
    cmap, path = corpus_map(query, _settings(index_dir), out_path, method, progress=_first_run_progress(), busy=busy)
    if as_json:
        _print_json({"out": str(path.resolve()), **cmap.as_dict()})
        return
    from rich.text import Text

    out.print(Text.assemble("Map of ", (f"{len(cmap.points):,}", "bold"), f" papers in {len(cmap.themes)} themes "
                            "written to ", _linked(str(path), path.resolve().as_uri())))
    if query:
        if cmap.marked:
            for p in cmap.marked:
                _print_paper(f"[{p.mark}]", p.paper_id, p.title)
        else:
            out.print("No paper in the index matches the query; nothing is highlighted.")


@app.command()
@handle_errors
def remove(
    paper_ids: Annotated[list[str], typer.Argument(help="Paper ids to delete from the index.")],
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Delete papers from the index (chunks, record and BM25 entry)."""
    from assistant.service.api import remove_papers

    removed = remove_papers(paper_ids, _settings(index_dir))
    if as_json:
        _print_json({"removed": removed})
    else:
        out.print(f"Removed {len(removed)} papers.")


@app.command()
@handle_errors
def doctor(index_dir: IndexDir = None, as_json: JsonFlag = False,
           repair: Annotated[bool, typer.Option("--repair", help="Mend the index first: finish an interrupted "
                                                "remove, restore the manifest, drop orphans, re-embed lost vectors, "
                                                "rebuild BM25 and the vector cache.")] = False):
    """Check the set-up: configuration (key masked), index, embedder, LLM endpoint."""
    from assistant.service.api import doctor as doctor_fn

    report = doctor_fn(_settings(index_dir), repair=repair)
    if not as_json:
        for line in report.get("repairs", []):
            out.print(f"[green]repaired:[/] {escape(line)}")
        for line in report.get("unrepaired", []):
            out.print(f"[red]not repaired:[/] {escape(line)}")
    if as_json:
        _print_json(report)
    else:
        from rich.table import Table

        from assistant.search.retrieve import DEFAULT_GATE

        cfg = Table(title="configuration", show_header=False)
        for key, value in report["config"].items():
            if key == "min_relevance" and value is None:
                shown = f"calibrated ({DEFAULT_GATE})"
            else:
                shown = "[dim]unset[/]" if value is None else escape(str(value))
            cfg.add_row(key, shown)
        out.print(cfg)
        for c in report["checks"]:
            mark = "[green]ok[/]  " if c["ok"] else "[red]FAIL[/]"
            out.print(f"{mark} {c['check']:9s} {escape(str(c['detail']))} [dim]({c['ms']} ms)[/]")
    if not report["ok"]:
        raise typer.Exit(1)


@app.command("eval")
@handle_errors
def eval_cmd(
    file: Annotated[Optional[Path], typer.Argument(help="Question file in the dev.jsonl format.")] = None,
    beir: Annotated[Optional[Path], typer.Option("--beir", help="Evaluate a BEIR folder (corpus.jsonl, "
                                                  "queries.jsonl, qrels_test.tsv) instead.")] = None,
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Measure retrieval and answers: R@1, R@5, MRR, nDCG@10, gate accuracy, fact coverage."""
    from assistant.service.evaluate import evaluate_beir, evaluate_questions, load_questions, public_row

    if (file is None) == (beir is None):
        raise typer.BadParameter("give a question FILE or --beir DIR (one of them)")
    emit = (lambda row: _print_json(row, indent=None)) if as_json else None
    if beir is not None:
        settings = _settings(index_dir)
        if index_dir is None and _GLOBAL.get("index_dir") is None and not os.environ.get("ASSISTANT_INDEX_DIR"):
            settings = _settings(Path("index_store") / "beir" / beir.resolve().name)
        bar, asking = _BuildProgress(f"Indexing {beir.name}"), _eval_progress(beir.name)
        try:
            summary = evaluate_beir(beir, settings, on_row=emit, progress=bar, on_question=asking)
        finally:
            bar.close()
            asking.close()
        _render_summary(summary, as_json)
        return
    items = load_questions(file)
    settings = _settings(index_dir)
    asking = _eval_progress(file.name)
    try:
        report = evaluate_questions(items, settings, on_row=(lambda r: emit(public_row(r))) if emit else None,
                                    progress=_first_run_progress(), on_question=asking)
    finally:
        asking.close()
    summary = report.summary()
    if not as_json:
        from rich.table import Table

        table = Table(title=f"{file.name}: {len(report.rows)} questions")
        for col in ("id", "type", "gold rank", "answerable", "first citation"):
            table.add_column(col)
        for r in report.rows:
            ranked = r["hits"]
            rank = next((str(i) for i, p in enumerate(ranked, 1) if p in r["_gold"]), "-") if r["_gold"] else "-"
            first = r["citations"][0] if r["citations"] else "-"
            ok = "[green]" if (not r["_gold"] or first in r["_gold"]) else "[red]"
            table.add_row(escape(str(r["id"])), escape(str(r["type"])), rank, str(r["answerable"]),
                          f"{ok}{escape(first)}[/]")
        out.print(table)
    _render_summary(summary, as_json)


def _render_summary(summary: dict, as_json: bool) -> None:
    if as_json:
        _print_json({"summary": summary}, indent=None)
        return
    from rich.table import Table

    table = Table(title="summary")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        if isinstance(value, dict):
            for sub, vals in value.items():
                table.add_row(escape(f"  {sub}"), escape("  ".join(f"{k}={v}" for k, v in vals.items())))
        else:
            table.add_row(escape(str(key)), "-" if value is None else escape(str(value)))
    out.print(table)


CHAT_HELP = """Follow-ups can name the last answer's sources: "how does the second one do it?", "compare [1] and [3]".
Commands:
  /sources   show the sources of the last answer
  /show N    the full abstract of source N of the last answer
  /save FILE save the conversation (.md transcript, .bib citations, .json evidence); --force overwrites
  /filter X  only search papers from source file X (source:NAME) or containing keyword X; /filter off
  /clear     forget the conversation
  /help      this help
  /exit      leave (Ctrl-D works too)"""


@app.command()
@handle_errors
def chat(
    index_dir: IndexDir = None,
    resume: Annotated[bool, typer.Option("--continue", "-c", help="Resume the most recent conversation.")] = False,
    chat_id: Annotated[Optional[str], typer.Option("--id", help="Resume the conversation with this id.")] = None,
    list_chats: Annotated[bool, typer.Option("--list", help="List saved conversations and exit.")] = False,
):
    """Talk through a topic: follow-up questions use the earlier turns; conversations are saved."""
    from assistant.chat.history import ChatStore

    settings = _settings(index_dir)
    store = ChatStore(settings.index_dir)
    if list_chats:
        rows = store.list()
        for r in rows:
            out.print(f"[green]{escape(str(r['id']))}[/]  {escape(str(r['updated']))}  {r['turns']:>3} turns  "
                      f"{escape(r['title'] or '(empty)', one_line=True)}")
        if not rows:
            out.print("[dim]No saved conversations.[/]")
        return
    from assistant.service.api import conversation
    from assistant.chat.conversation import Turn

    cid = chat_id or (store.latest() if resume else None)
    previous = store.load(cid) if cid else []
    if resume and cid is None:
        err.print("[dim]No saved conversation to continue; starting a new one.[/]")
    conv = conversation(settings, progress=_first_run_progress(), on_rerank=_rerank_progress())
    conv.turns = [Turn(a.question, a) for a in previous]
    cid = cid or store.new()
    interactive = sys.stdin.isatty()
    if interactive:
        mode = f"LLM: {settings.model}" if settings.llm_enabled else "extractive (no LLM configured)"
        out.print(f"[bold]assistant chat[/] {escape(cid)} — {conv.retriever.index.count()} papers, {escape(mode)}. "
                  "/help for commands.")
        for t in conv.turns[-2:]:
            out.print(f"[dim]> {escape(t.question, one_line=True)}[/]")
    for line in _read_lines(interactive):
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            cmd = line.split()[0].lower()
            if cmd in {"/exit", "/quit"}:
                break
            if cmd == "/help":
                out.print(CHAT_HELP)
            elif cmd == "/clear":
                conv.clear()
                store.clear(cid)
                out.print("[dim]Conversation cleared.[/]")
            elif cmd == "/save":
                arg = line.split(maxsplit=1)[1].strip() if len(line.split(maxsplit=1)) > 1 else ""
                force = arg.endswith(" --force")
                arg = arg.removesuffix(" --force").strip()
                if not arg:
                    out.print("[yellow]Usage: /save FILE.md|FILE.bib|FILE.json [--force][/]")
                elif not conv.turns:
                    out.print("[dim]Nothing to save yet.[/]")
                else:
                    try:
                        _save([t.answer for t in conv.turns], Path(arg).expanduser(), settings, force)
                    except AssistantError as exc:
                        err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
            elif cmd == "/show":
                arg = line.split(maxsplit=1)[1].strip() if len(line.split(maxsplit=1)) > 1 else ""
                sources = conv.last.answer.sources if conv.last else []
                if not arg.isdigit() or not 1 <= int(arg) <= len(sources):
                    out.print(f"[yellow]Usage: /show N with N between 1 and {len(sources)}[/]" if sources
                              else "[dim]No answer yet.[/]")
                else:
                    p = conv.retriever.index.get_paper(sources[int(arg) - 1].paper_id)
                    out.print(f"[bold]{shown(p.title, one_line=True)}[/] [green]{escape(p.id, one_line=True)}[/]\n"
                              f"{shown(p.abstract)}")
            elif cmd == "/filter":
                arg = line.split(maxsplit=1)[1].strip() if len(line.split(maxsplit=1)) > 1 else ""
                if not arg:
                    n = len(conv.retriever.allowed) if conv.retriever.allowed is not None else None
                    out.print(f"[dim]Filter: {n} papers.[/]" if n is not None else "[dim]No filter.[/]")
                else:
                    try:
                        n = conv.retriever.set_filter(arg)
                        out.print(f"[dim]Searching {n} papers" + ("" if arg.lower() == "off" else
                                                                  f" matching {escape(arg)}") + ".[/]")
                    except AssistantError as exc:
                        err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
            elif cmd == "/sources":
                if conv.last:
                    render_sources(conv.last.answer)
                else:
                    out.print("[dim]No answer yet.[/]")
            else:
                out.print(f"[yellow]Unknown command {escape(cmd)}.[/] /help lists them.")
            continue
        if not interactive:
            out.print(f"[bold]> {escape(line)}[/]")
        stream = _streamer() if settings.llm_enabled else None
        try:
            answer = conv.ask(line, on_token=stream)
        except LLMError as exc:  # the LLM failed this turn: say so in one line, and answer it offline instead
            if stream:
                stream.close()
            err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
            out.print("[yellow]Answered without the LLM instead:[/]")
            stream, answer = None, conv.ask_offline(line)
        except AssistantError as exc:
            if stream:
                stream.close()
            if not interactive:  # a script's failed turn ends it (reported once, by handle_errors)
                raise
            # one failed turn (say, the LLM is down) must not end an interactive session
            err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
            continue
        if stream:
            stream.close(answer.text)
        store.add_turn(cid, answer)
        render_answer(answer, streamed=bool(stream and stream.used))
        out.print()


def _read_lines(interactive: bool):
    if not interactive:
        for line in sys.stdin:
            yield line
        return
    try:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory

        hist = Path(os.environ.get("ASSISTANT_HISTORY_FILE", Path.home() / ".assistant_history"))
        session = PromptSession(history=FileHistory(str(hist)))
        prompt = session.prompt
    except Exception:  # no usable terminal for prompt_toolkit: plain input() with readline
        prompt = input
    while True:
        try:
            yield prompt("assistant> ")
        except KeyboardInterrupt:  # as in a shell: Ctrl-C drops the half-typed line, Ctrl-D or /exit leaves
            out.print("[dim](Ctrl-D or /exit to leave)[/]")
        except EOFError:
            out.print()
            return


def main() -> None:
    app()


if __name__ == "__main__":
    main()
