"""How the terminal shows things: consoles, progress bars, answers with their sources, streamed tokens.

Every string from a user, the corpus or a model goes through :func:`escape` or :func:`shown` (made inert for the
terminal, then escaped for rich markup); --json output through :func:`print_json`.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


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

    from assistant.service.api import for_terminal

    return rich_escape(for_terminal(text, one_line=one_line))


def shown(text: str, one_line: bool = False) -> str:
    """Abstract text for the terminal: its LaTeX as plain Unicode (``86.2\\%`` -> ``86.2%``), then as
    :func:`escape`. --json keeps the text verbatim."""
    from assistant.service.api import readable

    return escape(readable(text), one_line=one_line)


def linked(label: str, target: str | None, style: str = ""):
    """``label`` as rich Text, a terminal hyperlink to ``target`` when that is a plain http(s) or file URL.
    Built as a style, never as ``[link=...]`` markup: a ``]`` or ``[0]`` in a URL or path broke that."""
    import re

    from rich.style import Style
    from rich.text import Text

    from assistant.service.api import for_terminal

    text = Text(for_terminal(label, one_line=True), style=style)
    # printable ASCII only: nothing in the target can end the OSC 8 sequence it is sent in
    if target and re.fullmatch(r"(?:https?|file)://[\x21-\x7e]+", target):
        text.stylize(Style(link=target))
    return text


out = _LazyConsole(highlight=False, soft_wrap=False)


# soft_wrap: an error or report line is one line however narrow the terminal (or 80 columns when piped)
err = _LazyConsole(stderr=True, highlight=False, soft_wrap=True)


class BuildProgress:
    """A rich progress bar for embedding papers, shown only when work happens."""

    def __init__(self, label: str = "Embedding papers", transient: bool = False):
        self.label = label  # escaped when the bar is shown (rich.markup is not imported by a command that shows none)
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
            # a progress column reads markup: "Evaluating q[1].jsonl"
            self.task = self.progress.add_task(escape(self.label, one_line=True), total=total)
        self.progress.update(self.task, completed=done, total=total)
        self.finished = done >= total
        if self.finished:
            self.close()

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def relabel(self, label: str) -> None:
        """Name what the bar shows from now on (a command finishing an interrupted write before its own work)."""
        self.label, self.finished = label, False
        self.close()

    def note(self, line: str) -> None:
        """Something the command did besides what was asked (it finished a write a kill interrupted): one line on
        stderr; a bar shown after it is labelled as that work, not as the first build."""
        self.close()
        err.print(f"[yellow]note:[/] {escape(line, one_line=True)}")
        self.label, self.finished = "Finishing an interrupted write", False


def rerank_progress():
    """Progress bar for re-ranking (ASSISTANT_RERANK), ~0.35-1 s per paper on 2 cores; shown before the first
    paper is read, gone when done."""
    return BuildProgress("Re-ranking a close call (ASSISTANT_RERANK)", transient=True)


def eval_progress(name: str):
    """Progress bar over an eval's questions: a re-ranked one takes ~8 s, so a long file can take minutes."""
    return BuildProgress(f"Evaluating {name}", transient=True)


def first_run_progress():
    """Progress bar used when a command has to build the default index first."""
    return BuildProgress("Building the index from the bundled ICLR 2026 corpus (first run only)")


def print_json(data, indent: int | None = 2) -> None:
    """JSON on stdout: strings verbatim, with controls, bidi and zero-width characters as \\u escapes."""
    from assistant.service.api import json_for_terminal

    text = json_for_terminal(data, indent=indent)
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):  # an ASCII or Latin-1 stdout: the same JSON, non-ASCII as \u escapes
        import json

        text = json.dumps(json.loads(text), indent=indent, ensure_ascii=True)
    sys.stdout.write(text + "\n")


def print_read_as(mended: str | None, console: Console | None = None) -> None:
    """How a question or criterion with typos was read (Retriever.mend), when it had any."""
    if mended:
        (console or out).print(f"[dim]Read as: {escape(mended)}[/]")


def print_unsure(unsure: bool, console: Console | None = None) -> None:
    """The line above what the answerable model reads as more likely a topic the corpus lacks."""
    if unsure:
        from assistant.service.api import UNSURE_NOTE

        (console or out).print(f"[yellow]{UNSURE_NOTE}[/]")


def render_sources(answer, console: Console | None = None) -> None:
    console = console or out
    if not answer.citations and answer.mode == "llm" and answer.answerable and answer.sources:
        # The promise is that every claim points at an abstract: an answer citing none must say so.
        one = len(answer.sources) == 1
        given = "did not cite the only source" if one else f"cited none of the {len(answer.sources)} sources"
        console.print(f"\n[yellow]The model {given} it was given: nothing above is checked against an abstract. "
                      f"{'It was' if one else 'They were'}:[/]")
        for n, h in enumerate(answer.sources, 1):
            print_paper(f"[{n}]", h.paper_id, h.title, None, console)
        if answer.quoted:
            console.print("\n[dim italic]What they say, quoted without the model (verbatim, cited):[/]")
            console.print(shown(answer.quoted))
        return
    if not answer.citations:
        if not answer.answerable and answer.parts:  # each part's papers: none covers all of them
            print_parts(answer.parts, console)
            return
        if not answer.answerable and answer.related:  # the nearest papers, never an answer
            console.print("[dim]Nearest papers (not on exactly this; not cited):[/]")
            for h in answer.related:
                print_paper("-", h.paper_id, h.title, None, console)
        return
    console.print("\n[bold]Sources[/]")
    for c in answer.citations:
        print_paper(f"[{c.n}]", c.paper_id, c.title, c.snippet, console)
    # Sources keep their retrieval numbers, so a gap in them ([2] [3] without [1]) needs saying: the
    # missing ones were retrieved and read but gave nothing the answer used.
    cited = {c.n for c in answer.citations}
    uncited = [f"[{n}] {h.paper_id}" for n, h in enumerate(answer.sources, 1) if n not in cited and n < max(cited)]
    if uncited:
        console.print(f"[dim]Also retrieved, not cited: {escape(', '.join(uncited))}[/]")


def print_parts(parts, console: Console | None = None) -> None:
    """Each part of a question the corpus holds only apart, with its papers (never citations)."""
    console = console or out
    console.print("[dim]Papers on each part (none is on both; not cited):[/]")
    for part in parts:
        console.print(f"[bold]On “{shown(part.text, one_line=True)}”:[/]")
        for pid, title in zip(part.papers, part.titles):
            print_paper("  -", pid, title, None, console)


def print_paper(label: str, paper_id: str, title: str, quote: str | None = None, console: Console | None = None):
    """One cited paper: label, id, title, and the quoted sentence or snippet."""
    console = console or out
    console.print(f"[bold cyan]{escape(label)}[/] [green]{escape(paper_id, one_line=True)}[/] — "
                  f"{shown(title, one_line=True)}")
    if quote:
        console.print(f"    [dim]“{shown(quote)}”[/]")


def render_answer(answer, streamed: bool = False, console: Console | None = None, llm_failed: bool = False) -> None:
    """An answer as the terminal shows it; ``llm_failed``: answered offline because the LLM failed this turn (an
    LLM is configured, so the label does not say none is)."""
    from assistant.service.api import EXTRACTIVE_LABEL

    console = console or out
    print_read_as(answer.read_as, console)
    print_unsure(answer.unsure, console)
    if answer.mode == "extractive" and answer.answerable:
        label = EXTRACTIVE_LABEL.replace("no LLM configured", "the LLM failed this turn") if llm_failed \
            else EXTRACTIVE_LABEL
        console.print(f"[dim italic]{label}[/]")
    if not streamed:
        console.print(shown(answer.text))
    if answer.invalid_citations:  # what the text shows: the marker kept, with a "?", and no source behind it
        from assistant.service.api import invalid_citations_note

        console.print(f"[yellow]{escape(invalid_citations_note(answer.invalid_citations))}[/]")
    if not answer.complete and streamed:
        # what llm_answer appended after the stream: cut at max_tokens, or the stream broke off
        console.print(f"[yellow]{escape(answer.text.rsplit(chr(10) * 2, 1)[-1])}[/]")
    weak = [s for s in answer.support if not s["supported"]]
    if weak:
        from assistant.service.api import CHECK_CLAIMS

        console.print(f"\n[yellow]{CHECK_CLAIMS}[/]")
        for s in weak:
            console.print(f"[yellow]  ⚠ {shown(s['sentence'])}[/]")
    render_sources(answer, console)


def markdown(text: str):
    """Model text as rich Markdown, made inert first; links shown with their URL, not hidden behind text."""
    from rich.markdown import Markdown

    from assistant.service.api import readable
    from assistant.service.api import for_terminal

    return Markdown(for_terminal(readable(text)), hyperlinks=False)


class Stream:
    """Render streamed tokens: live Markdown in a terminal, line by line when piped (each line made inert and
    its LaTeX readable, which a lone token cannot be)."""

    def __init__(self):
        self.parts: list[str] = []
        self.live = None
        self.used = False
        self.pending = ""
        self.closed_pipe = False

    def __call__(self, token: str) -> None:
        self.used = True
        self.parts.append(token)
        if out.is_terminal:
            from rich.live import Live

            if self.live is None:
                self.live = Live(console=getattr(out, "real", out), refresh_per_second=12, vertical_overflow="visible")
                self.live.start()
            self.live.update(markdown("".join(self.parts)))
        else:
            self.pending += token
            if "\n" in self.pending:
                done, self.pending = self.pending.rsplit("\n", 1)
                self._write(done + "\n")

    def _write(self, text: str) -> None:
        from assistant.service.api import readable
        from assistant.service.api import for_terminal

        if self.closed_pipe:
            return
        try:
            sys.stdout.write(for_terminal(readable(text)))
            sys.stdout.flush()
        except BrokenPipeError:  # the reader left (| head): the answer still completes and --save still writes
            self.closed_pipe = True

    def close(self, final_text: str | None = None) -> None:
        if self.live is not None:
            if final_text is not None:  # the parsed text: unknown citations now marked [n?]
                self.live.update(markdown(final_text))
            self.live.stop()
            self.live = None
        elif self.used:
            self._write(self.pending + "\n")
            self.pending = ""


def streamer():
    return Stream()


def final_text(answer) -> str:
    """What a streamed answer's live display ends with: the parsed text ([n?] marked), without the mark an
    incomplete one ends with, which :func:`render_answer` prints under it (it was shown twice)."""
    return answer.text if answer.complete else answer.text.rsplit("\n\n", 1)[0]


@contextlib.contextmanager
def streaming(enabled: bool):
    """A :class:`Stream` to pass as ``on_token`` (None when not ``enabled``), closed if the call it serves fails."""
    stream = Stream() if enabled else None
    try:
        yield stream
    except BaseException:
        if stream:
            stream.close()
        raise


def _print_themes(summary) -> None:
    """An extractive overview: its verbatim sentences shown as text (with LaTeX made readable), not read as Markdown,
    which dropped a line holding "<p>" and ate the asterisks of "**weighted**" and "x_i * y_i"."""
    numbers = {c.paper_id: c.n for c in summary.citations}
    out.print(shown(summary.answer.split("\n", 1)[0]))  # "7 papers in 3 themes:"
    for theme in summary.themes:
        out.print(f"\n[bold]{escape(theme.label)}[/]")
        for f in theme.papers:
            out.print(f"- {shown(f.evidence)} \\[{numbers.get(f.paper_id, '?')}]")


def render_overview(summary, streamed: bool = False) -> None:
    """`summarize` as the terminal shows it; ``streamed``: the LLM's synthesis was already shown as it came."""
    print_read_as(summary.read_as)
    print_unsure(summary.unsure)
    if summary.note:
        out.print(f"[yellow]{escape(summary.note)}[/]")
    elif summary.mode == "extractive" and summary.citations:
        out.print("[dim italic]Extractive overview (no LLM configured): verbatim sentences from the abstracts.[/]")
    if summary.mode == "extractive" and summary.themes:
        _print_themes(summary)
    elif not streamed:
        out.print(markdown(summary.answer))
    elif not summary.complete:  # the mark the synthesis ends with: cut at max_tokens, or the stream broke off
        out.print(f"[yellow]{escape(summary.answer.rsplit(chr(10) * 2, 1)[-1])}[/]")
    if summary.invalid_citations:  # as ask says it: the marker is shown with a "?", and no source is behind it
        marks = ", ".join(f"[{n}]" for n in summary.invalid_citations)
        out.print(f"[yellow]Note: {escape(marks)} in the synthesis name no source it was given: shown as "
                  f"{escape(', '.join(f'[{n}?]' for n in summary.invalid_citations))}, they cite nothing.[/]")
    if summary.citations:
        out.print("\n[bold]Sources[/]")
        for c in summary.citations:
            print_paper(f"[{c.n}]", c.paper_id, c.title)


#: What ordered a search's papers, as the line under them says (Retrieval.order); the score shown is the fused one.
ORDER_NOTES = {"fused": "ranked by the score shown: dense cosine and BM25 fused",
               "reranked": "re-ranked by SmolLM2's likelihood of the question (the score shown is the fused dense + "
                           "BM25 score it started from)",
               "named": "the paper the query names first, then by the fused dense + BM25 score shown",
               "area": "ranked as an area (mostly by cosine, framing words aside); the score shown is the fused "
                       "dense + BM25 score"}


def order_note(order: str) -> str:
    return ORDER_NOTES.get(order, ORDER_NOTES["fused"])


def render_verbose(answer) -> None:
    err.print(f"[dim]retrieval query: {escape(answer.retrieval_query or answer.question)}[/]")
    err.print(f"[dim]retrieved, in the order used ({order_note(getattr(answer, 'order', 'fused'))}):[/]")
    for h in answer.retrieved or answer.sources:
        likely = f" likelihood={h.likelihood:.2f}" if h.likelihood is not None else ""
        err.print(f"[dim]  {h.rank:>2}. {escape(h.paper_id)} fused={h.score:.3f} dense={h.dense:.3f} bm25={h.bm25:.2f}"
                  f"{likely}[/]")
    if answer.usage:
        u = answer.usage
        err.print(f"[dim]tokens: prompt {u.get('prompt_tokens')}, completion {u.get('completion_tokens')}, "
                  f"total {u.get('total_tokens')} ({escape(str(answer.model))})"
                  + (f", about ${u['cost_usd']:.4f}" if u.get("cost_usd") is not None else ", cost unknown") + "[/]")


def render_summary(summary: dict, as_json: bool) -> None:
    if as_json:
        print_json({"summary": summary}, indent=None)
        return
    from rich.table import Table

    table = Table(title="summary")
    table.add_column("metric", overflow="fold")  # narrow, a name wraps whole rather than ending in "…"
    table.add_column("value", justify="right", overflow="fold")
    for key, value in summary.items():
        if isinstance(value, dict):
            for sub, vals in value.items():
                table.add_row(escape(f"  {sub}"), escape("  ".join(f"{k}={v}" for k, v in vals.items())))
        else:
            table.add_row(escape(str(key)), "-" if value is None else escape(str(value)))
    out.print(table)



def save(answers, path, settings, force: bool = False) -> None:
    """Write answers to ``path`` (.md, .bib or .json) and say where, as a link."""
    from rich.text import Text

    from assistant.service.api import save_answers

    fmt = save_answers(answers, path, settings, force=force)
    err.print(Text.assemble((f"Saved {fmt} to ", "dim"), linked(str(path), path.resolve().as_uri())))


def encodable_output() -> None:
    """Output to a stream whose encoding cannot write every character (PYTHONIOENCODING=ascii, a latin-1 locale)
    shows what it cannot write as "?" (a title's "ü"), instead of a traceback half-way through a listing; JSON is
    written with \\u escapes there (render.print_json), which every encoding can write."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or ""
        try:
            utf = codecs.lookup(encoding).name.startswith("utf")
        except LookupError:
            utf = False
        if not utf and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
