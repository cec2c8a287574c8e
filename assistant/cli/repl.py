"""The chat prompt: reads lines (prompt_toolkit when interactive), runs slash commands, asks the conversation."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from assistant.cli.render import err, escape, final_text, out, render_answer, render_sources, save, shown, streamer
from assistant.errors import AssistantError, InputError, LLMError


CHAT_HELP = """Follow-ups can name the last answer's sources: "how does the second one do it?", "compare [1] and [3]".
Commands:
  /sources   show the sources of the last answer
  /show N    the full abstract of source N of the last answer (or /show NAME: a paper by id or name)
  /save FILE save the conversation (.md transcript, .bib citations, .json evidence); --force overwrites
  /filter X  only search papers from source file X (source:NAME) or containing keyword X; /filter off
  /clear     start afresh (the conversation so far stays saved: chat --list)
  /help      this help
  /exit      leave (also /quit, exit, quit, Ctrl-D)"""

#: A line that is only one of these leaves the chat, as /exit does: nobody asks the corpus about "exit".
LEAVE_WORDS = {"exit", "quit", "bye", ":q", "exit()", "quit()"}


def list_chats(settings) -> None:
    """``chat --list``: the saved conversations, newest first."""
    from assistant.service.api import chat_store

    rows = chat_store(settings).list()
    for r in rows:
        out.print(f"[green]{escape(str(r['id']))}[/]  {escape(str(r['updated']))}  {r['turns']:>3} turns  "
                  f"{escape(r['title'] or '(empty)', one_line=True)}")
    if not rows:
        out.print("[dim]No saved conversations.[/]")


def run(settings, resume: bool = False, chat_id: str | None = None, progress=None, on_rerank=None) -> int:
    """A chat session: a new conversation, or a saved one resumed; every answered turn is saved. Returns the exit
    code: 3 when a piped line could not be asked (each such line is said, and the lines after it are asked)."""
    from assistant.service.api import chat_store, conversation

    conv = conversation(settings, progress=progress, on_rerank=on_rerank)  # the index first: it may be built
    store = chat_store(settings)
    cid = chat_id or (store.latest() if resume else None)
    conv.resume(store.load(cid) if cid else [])
    spec, scope_from = store.filter(cid) if cid else (None, 0)
    if spec:  # the resumed chat searches, and reads "them", as it did when it was left
        _filter_command(spec, conv, store, cid, scope_from=scope_from)
    elif scope_from:
        conv.set_filter("off", scope_from=scope_from)
    if resume and cid is None:
        err.print("[dim]No saved conversation to continue; starting a new one.[/]")
    cid = cid or store.new()
    interactive = sys.stdin.isatty()
    if interactive:
        mode = f"LLM: {settings.llm.model}" if settings.llm_enabled else "extractive (no LLM configured)"
        out.print(f"[bold]assistant chat[/] {escape(cid)} — {conv.paper_count()} papers, {escape(mode)}. "
                  "/help for commands.")
        for t in conv.turns[-2:]:
            out.print(f"[dim]> {escape(t.question, one_line=True)}[/]")
    state = {"cid": cid, "code": 0}  # /clear moves on to a new conversation id
    try:
        _session(conv, store, state, settings, interactive)
    finally:
        store.drop_if_empty(state["cid"])
    return state["code"]


def _session(conv, store, state: dict, settings, interactive: bool) -> None:
    """The chat's lines, read until /exit or the end of input; every answered turn is saved. Lines pasted together
    are asked one by one, as piped lines are."""
    for pasted in _read_lines(interactive):
        for line in pasted.splitlines() or [""]:
            line = line.strip()
            if not line:
                continue
            if line.lower() in LEAVE_WORDS:
                return
            if line.startswith("/"):
                if not _command(line, conv, store, state, settings):
                    return
                continue
            if not interactive or "\n" in pasted.strip():
                out.print(f"[bold]> {escape(line)}[/]")
            answer = _turn(conv, line, settings, interactive, state)
            if answer is not None:
                store.add_turn(state["cid"], answer)
                out.print()


def _turn(conv, line: str, settings, interactive: bool, state: dict):
    """One question asked and rendered; None when it failed and the session goes on (always, interactive; piped,
    when the line itself could not be asked: the chat then ends with exit code 3)."""
    from assistant.service.api import require_words

    stream = streamer() if settings.llm_enabled else None
    failed = False
    try:
        answer = conv.ask(require_words(line), on_token=stream)  # "???" is one line, as in `ask`, not a refusal
    except LLMError as exc:  # the LLM failed this turn: say so in one line, and answer it offline instead
        if stream:
            stream.close()
        err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
        out.print("[yellow]Answered without the LLM instead:[/]")
        stream, answer, failed = None, conv.ask_offline(line), True
    except AssistantError as exc:
        if stream:
            stream.close()
        if not interactive and not isinstance(exc, InputError):  # a script's broken index ends it (said once)
            raise
        # one failed turn (a wordless line, the LLM down) must not end the session, nor lose the lines after it
        err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
        if not interactive:  # a script learns a line failed; a person at the prompt has seen it
            state["code"] = state["code"] or exc.exit_code
        return None
    except Exception as exc:  # a bug met by one turn: said in one line, and the chat goes on (when interactive)
        if stream:
            stream.close()
        if not interactive or os.environ.get("ASSISTANT_DEBUG"):
            raise
        err.print(f"[bold red]Error:[/] this turn failed ({escape(type(exc).__name__)}: "
                  f"{escape(str(exc), one_line=True)}); ASSISTANT_DEBUG=1 shows where")
        return None
    except KeyboardInterrupt:  # Ctrl-C stops this answer, not the chat: what was streamed stays, marked as cut
        if stream:
            stream.close()
        if not interactive:
            raise
        out.print("\n[yellow]\\[answer cut: Ctrl-C; this turn is not kept in the conversation][/]")
        return None
    if stream:
        stream.close(final_text(answer))
    render_answer(answer, streamed=bool(stream and stream.used), llm_failed=failed)
    if not answer.answerable and conv.filter_size() is not None:  # "the corpus" above is what the filter lets in
        out.print(f"[dim]Searched only the {conv.filter_size()} papers the /filter lets through; /filter off "
                  f"searches all {conv.paper_count()}.[/]")
    return answer


def _command(line: str, conv, store, state: dict, settings) -> bool:
    """Run one slash command; False when it ends the session."""
    cid = state["cid"]
    cmd, _, arg = line.partition(" ")
    cmd, arg = cmd.lower(), arg.strip()
    if arg and cmd in {"/exit", "/quit", "/help", "/clear", "/sources"}:  # "/clear filter" must not wipe the chat
        out.print(f"[yellow]Usage: {escape(cmd)} (it takes nothing after it); nothing was done.[/]")
        return True
    if cmd in {"/exit", "/quit"}:
        return False
    if cmd == "/help":
        out.print(CHAT_HELP)
    elif cmd == "/clear":  # a new conversation: the one so far stays saved (it was deleted, with no word)
        conv.clear()
        spec = store.filter(cid)[0]
        kept = bool(store.load(cid))
        store.drop_if_empty(cid)
        state["cid"] = store.new()
        store.set_filter(state["cid"], spec, 0)  # the filter stays; no earlier question does
        out.print("[dim]Cleared: a new conversation" + (f"; the one before is saved (assistant chat --id {cid})"
                                                        if kept else "")
                  + (f"; the filter stays ({escape(spec)}; /filter off lifts it)" if spec else "") + ".[/]")
    elif cmd == "/save":
        failed = _save_command(arg, conv, settings)
        if failed and not sys.stdin.isatty():  # `... | assistant chat && upload notes.md` must not go ahead
            state["code"] = state["code"] or failed
    elif cmd == "/show":
        _show_command(arg, conv)
    elif cmd == "/filter":
        _filter_command(arg, conv, store, cid)
    elif cmd == "/sources":
        if conv.last:
            referent = conv.referent()  # what "[2]" and "the first two" point at: a refusal leaves it as it was
            if referent is not conv.last.answer:
                out.print(f"[dim]References point at the answer to: {escape(referent.question, one_line=True)}[/]")
            render_sources(referent)
        else:
            out.print("[dim]No answer yet.[/]")
    else:
        out.print(f"[yellow]Unknown command {escape(cmd)}.[/] /help lists them.")
    return True


def _save_command(arg: str, conv, settings) -> int:
    """``/save FILE``; the exit code of what failed (0: saved)."""
    import shlex

    try:
        words = shlex.split(arg)  # a name with spaces is quoted: /save "my notes.md"
    except ValueError:
        words = []
    force = "--force" in words
    names = [w for w in words if w != "--force"]
    arg = names[0] if len(names) == 1 else ""
    if not arg:
        out.print("[yellow]Usage: /save FILE.md|FILE.bib|FILE.json [--force] (quote a name with spaces)[/]")
        return 2
    if not conv.turns:
        out.print("[dim]Nothing to save yet.[/]")
        return 3
    try:
        save([t.answer for t in conv.turns], Path(arg).expanduser(), settings, force)
    except AssistantError as exc:
        err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
        return exc.exit_code
    return 0


def _show_command(arg: str, conv) -> None:
    """``/show N`` (source N of the last answer) or ``/show NAME`` (a paper by id, name or part of its title)."""
    sources = conv.referent().sources if conv.last else []
    arg = re.sub(r"^\[(\d+)\??\]$", r"\1", arg)  # "/show [3]", the marker as the answer shows it
    if not arg or arg.isdigit() and not 1 <= int(arg) <= len(sources):
        out.print(f"[yellow]Usage: /show N with N between 1 and {len(sources)}, or /show NAME[/]" if sources
                  else "[yellow]Usage: /show NAME (a paper's id, name or part of its title)[/]")
        return
    try:  # N as "[N]" reads it: a source the answer cited (/sources lists them)
        p = conv.paper(conv.numbered(int(arg))[0] if arg.isdigit() else arg)
    except AssistantError as exc:
        err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
        return
    out.print(f"[bold]{shown(p.display_title, one_line=True)}[/] [green]{escape(p.id, one_line=True)}[/]\n"
              f"{shown(p.abstract)}")


def _filter_command(arg: str, conv, store, cid: str, scope_from: int | None = None) -> None:
    """``/filter X`` (kept with the chat, so ``--continue`` searches the same papers), ``/filter off``, ``/filter``."""
    if not arg:
        n = conv.filter_size()
        out.print(f"[dim]Filter: {n} papers.[/]" if n is not None else "[dim]No filter.[/]")
        return
    try:
        n = conv.set_filter(arg, scope_from=scope_from)
    except AssistantError as exc:
        err.print(f"[bold red]Error:[/] {escape(str(exc), one_line=True)}")
        return
    lifted = conv.filter_size() is None
    store.set_filter(cid, None if lifted else arg, conv.scope_from)
    out.print(f"[dim]Searching {n} papers" + ("" if lifted else f" matching {escape(arg)}") + ".[/]")


def _read_lines(interactive: bool):
    if not interactive:  # read as bytes: a line that is not UTF-8 (or not the locale's) is one line, not the end
        from assistant.service.api import text_of

        source = getattr(sys.stdin, "buffer", None)
        for line in source if source is not None else sys.stdin:
            yield text_of(line) if isinstance(line, bytes) else line
        return
    try:
        from prompt_toolkit import PromptSession

        session = PromptSession(history=_history())
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



def _history():
    """The prompt's input history: ASSISTANT_HISTORY_FILE (~/.assistant_history), or kept in memory for this chat
    with one line saying why, when that names a folder or a place no file can be written (prompt_toolkit printed a
    traceback at each line, and ate the question typed)."""
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    hist = Path(os.environ.get("ASSISTANT_HISTORY_FILE") or Path.home() / ".assistant_history").expanduser()
    if str(hist) == os.devnull:  # the usual way to keep no history
        return InMemoryHistory()
    problem = _history_problem(hist)
    if problem:
        err.print(f"[yellow]Input history is off for this chat: ASSISTANT_HISTORY_FILE {escape(str(hist))} {problem}; "
                  "set it to a file's path.[/]")
        return InMemoryHistory()
    return FileHistory(str(hist))


def _history_problem(hist: Path) -> str:
    """Why input history cannot live in ``hist`` ('' when it can): a folder, no folder, not a plain file (/dev/full
    read as history grew to 20 GB), or a file that will not take a line (/proc/version)."""
    if hist.is_dir():
        return "is a folder"
    if not hist.parent.is_dir():
        return "is in a folder that does not exist" if not hist.parent.exists() else "is under a file, not a folder"
    if hist.exists() and not hist.is_file():
        return "is not a plain file"
    try:
        with open(hist, "a", encoding="utf-8"):
            pass
    except OSError:
        return "cannot be written"
    return "" if hist.stat().st_size < HISTORY_MAX_BYTES else "is over 50 MB"


#: A history file larger than this is not read (prompt_toolkit reads it whole at the start).
HISTORY_MAX_BYTES = 50 * 2**20
