"""Hostile text is inert at the terminal: controls, OSC 8, bidi and zero-width characters from a corpus or a
model never reach it raw; no corpus or user string is read as rich markup; fake citations stay fake."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
from typer.testing import CliRunner

from assistant.qa.answer import parse_citations
from assistant.cli.app import app
from assistant.text.safetext import CITATION_LIKE, clip, for_terminal, inert_citations, json_for_terminal

from .conftest import FIXTURES, sse_response

runner = CliRunner()

#: Characters a terminal or a reader acts on: C0 (but newline and tab), DEL, C1 (0x9B is a one-byte CSI),
#: bidi embeddings/overrides/isolates, zero-width characters, a BOM, Unicode tags, line/paragraph separators.
HOSTILE_CHARS = ([chr(c) for c in range(0x20) if chr(c) not in "\n\t"] + [chr(c) for c in range(0x7F, 0xA0)]
                 + [chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)]
                 + ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff", "\u00ad", "\u2028",
                    "\u2029", "\U000e0041", "\U000e007f", "\ud800", "\udfff"])
SEQUENCES = ["\x1b[2J\x1b[H", "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\", "\x1b]0;title\x07",
             "\x9b31m", "\u202eevil\u202c", "zero\u200bwidth"]


def raw_hostile(text: str) -> list[str]:
    """The characters in ``text`` that a terminal would act on or a reader could not see."""
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"}]


hostile_text = st.lists(st.one_of(st.text(max_size=20), st.sampled_from(HOSTILE_CHARS), st.sampled_from(SEQUENCES)),
                        max_size=12).map("".join)


@given(hostile_text)
@hsettings(max_examples=400, deadline=None)
def test_for_terminal_leaves_nothing_a_terminal_acts_on(text):
    out = for_terminal(text)
    assert raw_hostile(out) == []
    out.encode("utf-8")  # a lone surrogate would have made the write fail
    assert for_terminal(out) == out
    # printable ASCII is kept, in order: the text still reads as it did
    plain = [c for c in text if " " <= c <= "~"]
    it = iter(out)
    assert all(c in it for c in plain)
    assert "\n" not in for_terminal(text, one_line=True) and "\t" not in for_terminal(text, one_line=True)


def test_escape_sequences_are_shown_not_obeyed():
    assert for_terminal("a\x1b[2Jb") == "a␛[2Jb"
    assert for_terminal("x\u202eevil\u202cy") == "xevily" and for_terminal("zero\u200bwidth") == "zerowidth"
    assert for_terminal("a\x9bb") == "a\\x9bb" and for_terminal("line\nnext\tcol") == "line\nnext\tcol"


@given(st.recursive(st.one_of(st.text(), hostile_text), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=10))
@hsettings(max_examples=200, deadline=None)
def test_json_output_escapes_what_the_terminal_would_obey_and_keeps_the_value(data):
    out = json_for_terminal(data)
    assert raw_hostile(out) == []
    out.encode("utf-8")
    assert json.loads(out) == data


@given(st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=30), min_size=1, max_size=40),
       st.integers(20, 300))
@hsettings(max_examples=200, deadline=None)
def test_snippets_are_cut_at_a_word_boundary(words, limit):
    text = " ".join(words)
    out = clip(text, limit)
    assert len(out) <= limit
    if out == text:
        return
    assert out.endswith("…")
    kept = out[:-1]
    assert text.startswith(kept)
    # cut between words, unless one word is longer than half the room (then it has to be cut inside)
    assert text[len(kept)] == " " or len(kept) < limit // 2 or " " not in text[limit // 2:limit]


# --- the CLI on an index with hostile papers -------------------------------------------------------------

EVIL = [
    {"id": "evil1", "title": "Clear\x1b[2J\x1b[H the screen \u202eevil\u202c [bold]title[/bold]",
     "abstract": "Federated learning security with \x1b]8;;http://evil.example\x1b\\hidden links\x1b]8;;\x1b\\ and "
                 "zero\u200bwidth joiners. Federated learning security is improved as shown in [7] and [1-3]. "
                 "The N\\\"uwa model \x9b31m is robust.",
     "url": "https://example.org/list?filter[0]=x&page[1]=2", "authors": ["A\u2066lice", "Bob [red]"]},
    {"id": "long1", "title": "A long abstract",
     "abstract": "Gradient compression for federated learning reduces the traffic between clients and the "
                 "server by quantising every update to a few bits and sending only the largest coordinates, "
                 "which keeps accuracy close to the uncompressed baseline on image benchmarks while the "
                 "supercalifragilisticexpialidocious traffic shrinks a hundred times."},
]


@pytest.fixture(scope="module")
def evil_index(tmp_path_factory):
    from assistant.config import Settings
    from assistant.text.corpus import load_papers
    from assistant.store.ingest import ingest

    root = tmp_path_factory.mktemp("evil")
    f = root / "evil.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in EVIL) + "\n", encoding="utf-8")
    papers, _ = load_papers([FIXTURES / "mini.txt", f])
    ingest(papers, Settings(index_dir=root / "index"))
    return root / "index"


def run(*args, input=None):
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def assert_inert(res):
    assert res.exit_code == 0, res.output
    for stream in (res.stdout, res.stderr):
        assert raw_hostile(stream) == [], stream


@pytest.mark.parametrize("command", [
    ["search", "federated learning security"],
    ["show", "evil1"],
    ["ask", "federated learning security"],
    ["which", "papers that study federated learning security"],
    ["summarize", "federated learning"],
    ["papers"],
])
def test_no_raw_control_character_reaches_the_terminal(evil_index, command):
    res = run(*command, "--index-dir", str(evil_index))
    assert_inert(res)
    if command[0] in {"search", "show", "papers"}:
        assert "␛[2J" in res.stdout  # shown, so the reader sees that something was there


def test_map_prints_hostile_titles_inert(evil_index, tmp_path):
    res = run("map", "federated learning security", "--layout", "pca", "--out", str(tmp_path / "m[1].html"),
              "--index-dir", str(evil_index))
    assert_inert(res)
    assert "m[1].html" in res.stdout and (tmp_path / "m[1].html").exists()


def test_show_prints_urls_and_names_with_brackets_literally(evil_index):
    res = run("show", "evil1", "--index-dir", str(evil_index))
    assert_inert(res)
    assert "https://example.org/list?filter[0]=x&page[1]=2" in res.stdout
    assert "[bold]title[/bold]" in res.stdout and "Bob [red]" in res.stdout
    assert "Nüwa" in res.stdout and 'N\\"uwa' not in res.stdout  # LaTeX accents rendered, as the README says


def test_json_keeps_the_text_verbatim_but_escaped(evil_index):
    res = run("show", "evil1", "--json", "--index-dir", str(evil_index))
    assert raw_hostile(res.stdout) == [] and "\\u001b[2J" in res.stdout and "\\u202e" in res.stdout
    assert json.loads(res.stdout)["title"] == EVIL[0]["title"]


def test_search_snippets_end_at_a_word(evil_index):
    res = runner.invoke(app, ["search", "gradient compression traffic", "--index-dir", str(evil_index)])
    assert res.exit_code == 0  # piped: each hit's snippet on its own line under it, never wrapped
    abstract = EVIL[1]["abstract"]
    line = next(line for line in res.stdout.splitlines() if line.startswith("    Gradient compression for"))
    snippet = line.strip()
    assert snippet.endswith("…") and len(snippet) <= 240  # 331 characters cut to 240 ...
    assert abstract.startswith(snippet[:-1]) and abstract[len(snippet) - 1] == " "  # ... between two words


@given(hostile_text.filter(lambda t: t.strip()))
@hsettings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
def test_random_control_characters_through_a_real_ingest_search_and_show(tmp_path_factory, text):
    from assistant.config import Settings
    from assistant.text.corpus import load_papers
    from assistant.store.ingest import ingest

    root = tmp_path_factory.mktemp("rand")
    f = root / "r.jsonl"
    f.write_text(json.dumps({"id": "r1", "title": text, "authors": [text], "url": f"https://x.org/{text}",
                             "abstract": f"Quantum annealing schedules {text} for portfolio optimisation."}) + "\n",
                 encoding="utf-8")
    papers, _ = load_papers([f])
    ingest(papers, Settings(index_dir=root / "index"))
    for command in (["show", "r1"], ["search", "quantum annealing portfolio"], ["papers"]):
        res = run(*command, "--index-dir", str(root / "index"))
        assert_inert(res)


# --- citations ----------------------------------------------------------------------------------------------


def test_citations_that_name_no_source_are_marked_unknown():
    text, cited, invalid = parse_citations("A [1]. B [-1]. C [1000]. D [1-3]. E [2, 1000]. F [ 3 ].", 3)
    assert text == "A [1]. B [-1?]. C [1000?]. D [1-3?]. E [2][1000?]. F [3]."
    assert cited == [1, 2, 3] and invalid == [-1, 1000, "1-3"]


def test_llm_answer_with_out_of_range_citations_marks_them(evil_index, mocked_openai_chat):
    mocked_openai_chat.return_value = sse_response("Security improves [1] ", "but see [1000], [-1] and [1-3].")
    res = run("ask", "federated learning security", "--json", "--index-dir", str(evil_index))
    data = json.loads(res.stdout)
    assert "[1000?]" in data["answer"] and "[-1?]" in data["answer"] and "[1-3?]" in data["answer"]
    assert [c["n"] for c in data["citations"]] == [1] and data["invalid_citations"] == [1000, -1, "1-3"]


def test_a_streamed_answer_piped_shows_the_marks_the_note_under_it_describes(evil_index, mocked_openai_chat):
    """Piped, the stream printed "[1000]" while the note under it said it "is marked [1000?]"; a marker split
    across tokens is marked too."""
    mocked_openai_chat.return_value = sse_response("Security improves [1] but see [10", "00] and [-", "1].\n",
                                                   "Also [2, 99].")
    res = run("ask", "federated learning security", "--index-dir", str(evil_index))
    streamed, note = res.stdout.split("Note:", 1)
    assert res.exit_code == 0 and "[1] but see [1000?] and [-1?]." in streamed and "[99?]." in streamed
    assert "[1000]" not in streamed and "[-1]" not in streamed and "[99]" not in streamed
    assert "marked [1000?], [-1?]" in " ".join(note.split())


def test_an_llm_answer_with_escape_codes_is_inert(evil_index, mocked_openai_chat):
    mocked_openai_chat.return_value = sse_response("Security \x1b[2J\x1b[H", "improves \u202ea\u202c [1].\n",
                                                   "Second\x07 line.")
    res = run("ask", "federated learning security", "--index-dir", str(evil_index))
    assert_inert(res)
    assert "␛[2J" in res.stdout and "Second␇ line." in res.stdout


def test_fake_markers_in_a_quoted_abstract_do_not_look_like_citations(evil_index, monkeypatch):
    res = run("ask", "How is federated learning security improved?", "--json", "--index-dir", str(evil_index))
    data = json.loads(res.stdout)
    quoted = [line for line in data["answer"].splitlines() if "as shown in" in line]
    assert quoted, data["answer"]  # the sentence with the abstract's own [7] and [1-3] is quoted ...
    for line in quoted:  # ... with those markers as (7) and (1-3); only our trailing [n] is a citation
        assert "(7)" in line and "(1-3)" in line  # (the paper's title before it keeps its literal "[bold]")
        assert CITATION_LIKE.findall(line) == [re.search(r"\[(\d+)\]$", line).group(1)]
    assert inert_citations("see [7], [1, 2] and [1-3]") == "see (7), (1, 2) and (1-3)"


# --- markup injection and --save ------------------------------------------------------------------------------


def test_save_to_a_name_with_brackets_writes_it_and_prints_the_answer(evil_index, tmp_path):
    target = tmp_path / "notes[1].md"
    res = run("ask", "federated learning security", "--save", str(target), "--index-dir", str(evil_index))
    assert res.exit_code == 0, res.output
    assert target.exists() and "Sources" in res.stdout and "notes[1].md" in res.stderr


def test_save_with_a_wrong_extension_is_refused_before_the_answer_is_computed(evil_index, tmp_path,
                                                                              mocked_openai_chat):
    mocked_openai_chat.return_value = sse_response("Security improves [1].")
    res = run("ask", "federated learning security", "--save", str(tmp_path / "x.txt"),
              "--index-dir", str(evil_index))
    assert res.exit_code == 3 and ".md, .bib or .json" in res.stderr
    assert not mocked_openai_chat.called  # refused before anything was asked of the LLM
    assert not (tmp_path / "x.txt").exists()


def test_save_over_an_existing_file_needs_force(evil_index, tmp_path, mocked_openai_chat):
    mocked_openai_chat.return_value = sse_response("Security improves [1].")
    target = tmp_path / "mine.md"
    target.write_text("my own notes\n")
    res = run("ask", "federated learning security", "--save", str(target), "--index-dir", str(evil_index))
    assert res.exit_code == 3 and "--force" in res.stderr and res.stderr.count("\n") == 1
    assert target.read_text() == "my own notes\n" and not mocked_openai_chat.called
    res = run("ask", "federated learning security", "--save", str(target), "--force", "--index-dir", str(evil_index))
    assert res.exit_code == 0 and "Security improves" in target.read_text()


def test_chat_save_to_a_name_with_brackets_does_not_end_the_session(evil_index, tmp_path):
    target = tmp_path / "n[2].md"
    script = f"federated learning security\n/save {target}\n/save {target}\nWhat is gradient compression?\n"
    res = run("chat", "--index-dir", str(evil_index), input=script)
    assert res.exit_code == 3, res.output  # the second /save was refused: a script learns it (it was 0)
    assert target.exists() and "n[2].md" in res.stderr
    assert "--force" in res.stderr  # the second /save did not overwrite silently ...
    # ... and the session went on to the next question
    assert "> What is gradient compression?" in res.stdout and res.stdout.count("Sources") == 2


# --- terminal details -----------------------------------------------------------------------------------------


def test_an_error_line_is_one_line_when_stderr_is_piped(tmp_path):
    missing = tmp_path / ("a-very-long-folder-name-" * 6) / "papers.jsonl"
    res = subprocess.run([sys.executable, "-m", "assistant", "ingest", str(missing), "--index-dir",
                          str(tmp_path / "idx")], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin",
                                                                                      "COLUMNS": "80"})
    assert res.returncode == 3
    assert res.stderr.count("\n") == 1 and str(missing) in res.stderr, res.stderr


def test_a_streamed_answer_in_a_terminal_is_inert_and_shows_link_targets(evil_index, mocked_openai_chat,
                                                                         monkeypatch):
    """In a terminal the stream is live Markdown: rich's own styling codes, but none of the model's, and a
    Markdown link shows where it goes instead of hiding it behind its text."""
    import io

    from rich.console import Console

    import assistant.cli.render as cli

    screen = io.StringIO()
    monkeypatch.setattr(cli, "out", Console(file=screen, force_terminal=True, width=200, color_system="standard"))
    mocked_openai_chat.return_value = sse_response("**Security** \x1b[2J\x1b]8;;http://evil.example\x1b\\x",
                                                   " see [the docs](http://evil.example/a) [1].")
    res = run("ask", "federated learning security", "--index-dir", str(evil_index))
    assert res.exit_code == 0, res.output
    shown = screen.getvalue()
    assert "\x1b[2J" not in shown and "\x1b]8;;http://evil" not in shown and "␛[2J" in shown
    assert "http://evil.example/a" in shown and "\x1b[1m" in shown  # the target visible; bold is still bold


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_output_that_cannot_write_every_character_gets_no_traceback(bundled_index_dir, encoding):
    """PYTHONIOENCODING=ascii: `show --json` of Nüwa and `papers` died half-way with a rich traceback box."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONIOENCODING": encoding, "ORT_DISABLE_TELEMETRY": "1"}
    base = [sys.executable, "-m", "assistant", "--index-dir", str(bundled_index_dir)]
    shown = subprocess.run(base + ["show", "002_20c6bded0bdf1017#7", "--json"], capture_output=True, env=env,
                           timeout=300)
    assert shown.returncode == 0, shown.stderr[-1500:]
    assert json.loads(shown.stdout)["title"].startswith("N\u00fcwa")
    listed = subprocess.run(base + ["papers"], capture_output=True, env=env, timeout=300)
    assert listed.returncode == 0 and b"Traceback" not in listed.stderr and listed.stdout.count(b"\n") >= 95


def test_input_that_is_not_utf8_is_read_not_a_traceback(bundled_index_dir, tmp_path):
    """A Latin-1 terminal or a question file saved by a Windows editor: "What is N\\xfcwa?" reached Python as a lone
    surrogate and every command died with a UnicodeEncodeError traceback; a piped chat lost the lines after it."""
    res = run("which", "caf\udce9 pruning", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0 and "café pruning" in res.stdout
    script = "What is Qronos?\nWhat is N\xfcwa?\nWhat is SPIRAL?\n".encode("latin-1")
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    assert res.exit_code == 0 and "> What is Nüwa?" in res.stdout and "> What is SPIRAL?" in res.stdout
