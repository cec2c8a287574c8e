"""The ``assistant`` command line: each command parses, calls one library function, renders.

Nothing heavy (llama-index, chromadb, onnxruntime, openai) is imported at module level, so
``assistant --help`` and argument errors are instant.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from assistant.cli.render import (BuildProgress, encodable_output, err, escape, eval_progress, final_text,
                                  first_run_progress, linked, order_note, out, print_json, print_paper, print_parts,
                                  print_read_as, print_unsure, render_answer, render_overview, render_summary,
                                  render_verbose, rerank_progress, save as save_answers, shown, streaming)
from assistant.errors import AssistantError

app = typer.Typer(
    name="assistant",
    help="Ask questions about a corpus of paper abstracts and get answers with cited snippets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals hold the API key
    rich_markup_mode=None,  # plain click help: typer.rich_utils would add ~0.1 s to every --help and usage error
)


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


def _pointed(text: str, index_dir: Path | None = None) -> str:
    """``text`` with its advised commands pointed at this command's index (:func:`~assistant.service.api.pointed`)."""
    from assistant.service.api import pointed

    try:
        return pointed(text, _settings(index_dir))
    except Exception:  # the settings themselves are bad: their line advises no command
        return text


def handle_errors(fn):
    """Translate AssistantError into one line on stderr and its exit code (tracebacks with ASSISTANT_DEBUG=1)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AssistantError as exc:
            if os.environ.get("ASSISTANT_DEBUG"):
                raise
            said = _pointed(_scrubbed(str(exc)), kwargs.get("index_dir"))
            err.print(f"[bold red]Error:[/] {escape(said, one_line=True)}")
            if kwargs.get("as_json"):  # a script reading stdout learns why too, not from an empty output
                print_json({"error": said, "exit_code": exc.exit_code})
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err.print("Interrupted.")
            raise typer.Exit(130) from None
        except BrokenPipeError:  # the reader of the output left (| head): no error to report, as a pipe ends
            _quiet_stdout()
            raise typer.Exit(1) from None  # as click ends a command whose output pipe closed
        except OSError as exc:  # the file system said no (permissions, a full disk): the user's to fix, in one line
            if os.environ.get("ASSISTANT_DEBUG"):
                raise
            known = _storage_error(exc, kwargs.get("index_dir"))
            where = f": {exc.filename}" if exc.filename else ""
            said = _pointed(str(known), kwargs.get("index_dir")) if known else (exc.strerror or str(exc)) + where
            err.print(f"[bold red]Error:[/] {escape(said, one_line=True)}")
            raise typer.Exit(known.exit_code if known else 1) from None
        except Exception as exc:  # a storage library's own error (Chroma, its HTTP client, SQLite): one line too
            known = _storage_error(exc, kwargs.get("index_dir"))
            if known is None or os.environ.get("ASSISTANT_DEBUG"):
                raise
            err.print(f"[bold red]Error:[/] {escape(_pointed(str(known), kwargs.get('index_dir')), one_line=True)}")
            raise typer.Exit(known.exit_code) from None

    return wrapper


#: Below this many columns a table of ids and titles leaves the titles no room: a list is shown instead.
NARROW = 70


def _plain_layout() -> bool:
    """Lists instead of tables: when the output is piped (a table's borders and wrapped cells break grep and cut)
    or the terminal is too narrow for one."""
    return not out.is_terminal or out.width < NARROW


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's own flush at exit raises no second BrokenPipeError."""
    import sys

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _scrubbed(text: str) -> str:
    """An error line with no secret in it (the API key, a run of it a server echoed, a URL's credentials), whatever
    raised it: the last guard before the terminal."""
    try:
        from assistant.service.api import scrubbed

        return scrubbed(text, _settings())
    except Exception:  # the settings themselves are bad: their error names no secret
        return text


def _storage_error(exc: BaseException, index_dir: Path | None = None):
    """faults.translate with this command's settings (None when the error is not a storage fault)."""
    from assistant.service.api import storage_error

    try:
        settings = _settings(index_dir)
    except Exception:  # the settings themselves are bad: not a storage fault
        return None
    return storage_error(exc, settings)


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
    bar = BuildProgress()
    try:
        report, parsed = ingest_paths(paths, settings, rebuild=rebuild, strict=strict, progress=bar)
    finally:
        bar.close()
    if as_json:
        print_json({**report.as_dict(), "removed_ids": report.removed,
                    "duplicates": [{"dropped": a, "kept": b} for a, b in parsed.duplicates + report.duplicates],
                     "skipped": parsed.skipped, "notes": parsed.notes, "index_dir": str(settings.index.dir)})
        return
    for line in report.recovered:
        err.print(f"[yellow]note:[/] {escape(line)}")
    for source in report.dropped_sources:
        err.print(f"[yellow]replaced:[/] the index no longer holds the papers from {escape(source)}")
    if report.removed:
        shown_ids = ", ".join(report.removed[:10]) + (f" and {len(report.removed) - 10} more" if len(report.removed) > 10 else "")
        err.print(f"[yellow]removed:[/] {len(report.removed)} paper{'' if len(report.removed) == 1 else 's'} no longer "
                  f"in the files read ({escape(shown_ids)})")
    for line in parsed.skipped:
        err.print(f"[yellow]skipped:[/] {escape(line)}")
    for line in parsed.notes:
        err.print(f"[yellow]note:[/] {escape(line)}")
    if report.kept_unread:
        n = len(report.kept_unread)
        err.print(f"[yellow]kept:[/] {n} stored paper{'' if n == 1 else 's'} this read did not find "
                  f"({escape(', '.join(report.kept_unread[:10]))}{' ...' if n > 10 else ''}), since records of "
                  "the same file were skipped; fix them and ingest again to update or remove them")
    if report.gone_files:
        n = len(report.gone_files)
        err.print(f"[yellow]note:[/] {n} stored paper{'' if n == 1 else 's'} came from files no longer in the folder "
                  f"read; kept (remove them with: assistant remove {escape(' '.join(report.gone_files[:10]))}"
                  f"{' ...' if n > 10 else ''})")
    for dropped, kept in parsed.duplicates + report.duplicates:
        err.print(f"[yellow]duplicate:[/] {escape(dropped)} has the same abstract as {escape(kept)}; stored once")
    chunks = f"{report.chunks} chunk{'' if report.chunks == 1 else 's'}"
    removed = f", {len(report.removed)} removed" if report.removed else ""
    out.print(f"Indexed {len(report.added)} new, {len(report.updated)} updated, {len(report.unchanged)} unchanged"
              f"{removed} papers ({chunks}) in {report.seconds:.1f}s → {escape(settings.index.chroma_url or str(settings.index.dir))}")


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
        from assistant.service.api import check_save_target

        check_save_target(save, force)
    settings = _settings(index_dir, top_k=k)
    with streaming(settings.llm_enabled and not as_json) as stream:
        answer = ask_fn(question, settings, on_token=stream, progress=first_run_progress(),
                        on_rerank=rerank_progress())
    if stream:
        stream.close(final_text(answer))
    if save is not None:
        save_answers([answer], save, settings, force)
    if as_json:
        print_json(answer.as_dict())
        return
    render_answer(answer, streamed=bool(stream and stream.used))
    if verbose:
        render_verbose(answer)


@app.command()
@handle_errors
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("-k", "--top-k", min=1, max=200, help="How many papers.")] = 10,
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Rank papers for a query (hybrid dense + BM25) and show each one's best snippet."""
    from assistant.service.api import clip
    from assistant.service.api import search as search_fn

    if not query.strip():
        raise typer.BadParameter("the query is empty")
    settings = _settings(index_dir)
    result = search_fn(query, settings, k=k, progress=first_run_progress(), on_rerank=rerank_progress())
    if as_json:
        print_json({"query": query, "answerable": result.answerable, "order": result.order,
                    "hits": [h.as_dict() for h in result.hits]} | ({"searched_for": result.query} if result.typed else {}))
        return
    if result.typed:
        out.print(f"[dim]Searched for: {escape(result.query)}[/]")
    if _plain_layout():  # piped, or too narrow for a table: one hit per block, its id whole on its first line
        for h in result.hits:
            out.print(f"{h.rank:>2}. [green]{escape(h.paper_id)}[/]  {h.score:.3f}  "
                      f"[bold]{shown(h.title, one_line=True)}[/]\n    [dim]{shown(clip(h.snippet, 240))}[/]",
                      soft_wrap=not out.is_terminal)
    else:
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
    out.print(f"[dim]Order: {order_note(result.order)}.[/]")
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

    items = list_papers(_settings(index_dir), progress=first_run_progress())
    if as_json:
        # "title" is the title every command and every --json shows; "indexed_title" what the index searches
        print_json([{"paper_id": p.id, "title": p.display_title, "indexed_title": p.title, "source": p.source,
                      "position": p.position, "title_derived": p.title_derived, "display_title": p.display_title,
                      "url": p.url,
                      "authors": list(p.authors)} for p in items])
        return
    if _plain_layout():  # piped (papers | grep), or too narrow for a table: "id  title", a line each
        for p in items:
            out.print(f"[green]{escape(p.id, one_line=True)}[/]  {shown(p.display_title, one_line=True)}",
                      soft_wrap=not out.is_terminal)
    else:
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
    paper_id: Annotated[str, typer.Argument(help="A paper id (000_c647aebf503422f2#3), a name only it has (Qronos) or a part of one title")],
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Show one paper's full abstract and metadata."""
    from assistant.service.api import get_paper

    p = get_paper(paper_id, _settings(index_dir), progress=first_run_progress())
    if as_json:
        print_json({"paper_id": p.id, "title": p.display_title, "indexed_title": p.title,
                     "title_derived": p.title_derived, "display_title": p.display_title, "abstract": p.abstract,
                     "source": p.source, "position": p.position, "authors": list(p.authors), "url": p.url,
                     "urls": list(p.urls), "date": p.date, "keywords": list(p.keywords)})
        return
    out.print(f"[bold]{shown(p.display_title, one_line=True)}[/]"
              + (" [dim](title derived from the abstract)[/]" if p.title_derived else ""))
    out.print(f"[green]{escape(p.id, one_line=True)}[/]  [dim]{escape(p.source, one_line=True)} #{p.position}[/]")
    if p.authors:
        out.print(shown(", ".join(p.authors), one_line=True))
    if p.url:
        out.print(linked(p.url, p.url))
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

    result = which_fn(criterion, _settings(index_dir), progress=first_run_progress())
    if as_json:
        print_json(result.as_dict())
        return
    print_read_as(result.read_as)
    print_unsure(result.unsure)
    count = f"[bold]{len(result.papers)}[/] paper{'s' if len(result.papers) != 1 else ''}"
    if result.name:  # a name is never paraphrased: the papers that write it
        out.print(f"{count} of the index {'writes' if len(result.papers) == 1 else 'write'} "
                  f"[italic]{escape(result.name)}[/] ([italic]{escape(result.criterion)}[/])")
    else:
        verb = "matches" if len(result.papers) == 1 else "match"
        judged = " (judged by the LLM)" if result.mode == "llm" else ""
        out.print(f"{count} {verb} [italic]{escape(result.criterion)}[/]{judged}")
    for i, f in enumerate(result.papers, 1):
        print_paper(f"{i:>2}.", f.paper_id, f.title, f.evidence)
    if result.parts:  # no paper meets all of it; each part's papers
        print_parts(result.parts)


@app.command()
@handle_errors
def summarize(
    area: Annotated[str, typer.Argument(help='A research area, e.g. "federated learning"')],
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Overview of an area: its papers grouped into themes, each with its contribution, cited."""
    from assistant.service.api import summarize as summarize_fn

    settings = _settings(index_dir)
    with streaming(settings.llm_enabled and not as_json) as stream:
        summary = summarize_fn(area, settings, progress=first_run_progress(), on_token=stream)
    streamed = bool(stream and stream.used) and summary.mode == "llm"
    if stream:  # a synthesis that cited nothing stays as streamed; the note under it says what replaces it
        stream.close(summary.answer if streamed else None)
    if as_json:
        print_json(summary.as_dict())
        return
    render_overview(summary, streamed)


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
    force: Annotated[bool, typer.Option("--force", help="Let --out overwrite an existing file.")] = False,
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """A 2-D map of every paper, coloured by theme; with a QUERY its papers are numbered like citations."""
    from assistant.service.api import corpus_map

    method = method.lower()
    if method not in ("tsne", "pca"):  # bad usage (exit 2), said before the output file is looked at
        raise typer.BadParameter(f"{method!r} is not a layout; use tsne or pca", param_hint="--layout")

    busy = None if as_json else (lambda message: err.status(message, spinner="dots"))
    cmap, path = corpus_map(query, _settings(index_dir), out_path, method, progress=first_run_progress(), busy=busy,
                            force=force)
    if as_json:
        print_json({"out": str(path.resolve()), **cmap.as_dict()})
        return
    from rich.text import Text

    out.print(Text.assemble("Map of ", (f"{len(cmap.points):,}", "bold"), f" papers in {len(cmap.themes)} themes "
                            "written to ", linked(str(path), path.resolve().as_uri())))
    if query:
        if cmap.marked:
            for p in cmap.marked:
                print_paper(f"[{p.mark}]", p.paper_id, p.title)
        else:
            out.print("No paper in the index matches the query; nothing is highlighted.")


@app.command()
@handle_errors
def remove(
    paper_ids: Annotated[list[str], typer.Argument(help="Papers to delete: ids, names or parts of one title each.")],
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Delete papers from the index (chunks, record and BM25 entry)."""
    from assistant.service.api import remove_papers

    removed = remove_papers(paper_ids, _settings(index_dir))
    if as_json:
        print_json({"removed": removed})
    else:
        out.print(f"Removed {len(removed)} paper{'' if len(removed) == 1 else 's'}: {escape(', '.join(removed))}")


@app.command()
@handle_errors
def doctor(index_dir: IndexDir = None, as_json: JsonFlag = False,
           repair: Annotated[bool, typer.Option("--repair", help="Mend the index first: finish an interrupted "
                                                "remove, restore the manifest, drop orphans, re-embed lost vectors, "
                                                "rebuild BM25 and the vector cache.")] = False):
    """Check the set-up: configuration (key masked), index, embedder, LLM endpoint."""
    from assistant.service.api import doctor as doctor_fn, pointed

    settings = _settings(index_dir)
    report = doctor_fn(settings, repair=repair)
    if not as_json:
        for line in report.get("repairs", []):
            out.print(f"[green]repaired:[/] {escape(pointed(line, settings))}")
        for line in report.get("unrepaired", []):
            out.print(f"[red]not repaired:[/] {escape(pointed(line, settings))}")
    if as_json:
        print_json(report)
    else:
        from rich.table import Table

        cfg = Table(title="configuration", show_header=False)
        for group, values in report["config"].items():
            if group == "tuning":  # not settable from the environment: where they live, not each of them
                cfg.add_row(group, f"{len(values)} hand-set numbers: TuningSettings (config.py)")
                continue
            for key, value in (values.items() if isinstance(values, dict) else [("", values)]):
                if key == "min_relevance" and value is None:
                    text = f"hand-set (tuning.relevance_gate {report['config']['tuning']['relevance_gate']})"
                else:
                    text = "[dim]unset[/]" if value is None else escape(str(value))
                cfg.add_row(f"{group}.{key}" if key else group, text)
        out.print(cfg)
        for c in report["checks"]:
            mark = "[green]ok[/]  " if c["ok"] else "[red]FAIL[/]"
            out.print(f"{mark} {c['check']:9s} {escape(pointed(str(c['detail']), settings))} [dim]({c['ms']} ms)[/]")
    if not report["ok"]:
        raise typer.Exit(report["exit_code"])


@app.command("mcp")
@handle_errors
def mcp_cmd(index_dir: IndexDir = None):
    """Serve the corpus to agent tools over MCP (stdio): ask, search, show, which, summarize, paper:// resources.
    Read-only; register it with your client as the command `assistant mcp` (README)."""
    from assistant.cli.mcp_handshake import answer_early

    early = answer_early()  # the client's `initialize`, answered before the MCP SDK's ~0.9 s import
    from assistant.cli.mcp_server import serve

    serve(lambda: _settings(index_dir), early)  # the settings are read by the first tool call


@app.command("eval")
@handle_errors
def eval_cmd(
    file: Annotated[Optional[Path], typer.Argument(help="Question file in the dev.jsonl format.")] = None,
    beir: Annotated[Optional[Path], typer.Option("--beir", help="Evaluate a BEIR folder (corpus.jsonl, "
                                                  "queries.jsonl, qrels_test.tsv) instead.")] = None,
    index_dir: IndexDir = None,
    as_json: JsonFlag = False,
):
    """Measure retrieval and answers: R@1, R@5, MRR, nDCG@10, gate accuracy, fact coverage. With --json: JSON
    Lines, an object per question (or BEIR query) as it is scored, then {"summary": ...}."""
    from assistant.service.evaluate import evaluate_beir, evaluate_questions, load_questions, public_row

    if (file is None) == (beir is None):
        raise typer.BadParameter("give a question FILE or --beir DIR (one of them)")
    emit = (lambda row: print_json(row, indent=None)) if as_json else None
    if beir is not None:
        settings = _settings(index_dir)
        if index_dir is None and _GLOBAL.get("index_dir") is None:  # never ASSISTANT_INDEX_DIR, the user's index
            settings = _settings(Path("index_store") / "beir" / beir.resolve().name)
        bar, asking = BuildProgress(f"Indexing {beir.name}"), eval_progress(beir.name)
        try:
            summary = evaluate_beir(beir, settings, on_row=emit, progress=bar, on_question=asking)
        finally:
            bar.close()
            asking.close()
        render_summary(summary, as_json)
        return
    items = load_questions(file)
    settings = _settings(index_dir)
    asking = eval_progress(file.name)
    try:
        report = evaluate_questions(items, settings, on_row=(lambda r: emit(public_row(r))) if emit else None,
                                    progress=first_run_progress(), on_question=asking)
    finally:
        asking.close()
    summary = report.summary()
    if not as_json:
        from rich.table import Table

        table = Table(title=f"{file.name}: {len(report.rows)} questions")
        for col in ("id", "type", "gold rank", "answerable", "first citation"):
            table.add_column(col, overflow="fold")  # narrow, an id wraps whole rather than ending in "…"
        for r in report.rows:
            ranked = r["hits"]
            rank = next((str(i) for i, p in enumerate(ranked, 1) if p in r["_gold"]), "-") if r["_gold"] else "-"
            first = r["citations"][0] if r["citations"] else "-"
            ok = "[green]" if (not r["_gold"] or first in r["_gold"]) else "[red]"
            table.add_row(escape(str(r["id"])), escape(str(r["type"])), rank, str(r["answerable"]),
                          f"{ok}{escape(first)}[/]")
        out.print(table)
    render_summary(summary, as_json)


@app.command()
@handle_errors
def chat(
    index_dir: IndexDir = None,
    resume: Annotated[bool, typer.Option("--continue", "-c", help="Resume the most recent conversation.")] = False,
    chat_id: Annotated[Optional[str], typer.Option("--id", help="Resume the conversation with this id.")] = None,
    list_chats: Annotated[bool, typer.Option("--list", help="List saved conversations and exit.")] = False,
):
    """Talk through a topic: follow-up questions use the earlier turns; conversations are saved."""
    from assistant.cli import repl

    if sum([resume, chat_id is not None, list_chats]) > 1:  # which one wins was not said
        raise typer.BadParameter("use one of --continue, --id and --list")
    settings = _settings(index_dir)
    if list_chats:
        repl.list_chats(settings)
        return
    code = repl.run(settings, resume, chat_id, progress=first_run_progress(), on_rerank=rerank_progress())
    if code:
        raise typer.Exit(code)


def main() -> None:
    encodable_output()
    app()


if __name__ == "__main__":
    main()
