"""BibTeX export of papers parsed from real files: titles of untitled abstracts, and headers as venues."""

import re

import pytest

from assistant.text.corpus import load_papers
from assistant.qa.export import markdown_inert, to_bibtex, venue

from .conftest import FIXTURES


@pytest.mark.parametrize("header,expected", [
    ("ICLR 2026 Papers", "ICLR 2026 Papers"),
    ("NeurIPS 2025 accepted papers", "NeurIPS 2025 accepted papers"),
    ("Proceedings of the 41st International Conference on Machine Learning",
     "Proceedings of the 41st International Conference on Machine Learning"),
    ("ICLR 2026 论文列表", "ICLR 2026"),  # another script: only the Latin-script venue and year it starts with
    ("论文列表", None),
    ("This file lists the abstracts I collected for my survey on federated learning.", None),
    ("Abstracts", None),
    ("my reading list", None),
    ("", None),
])
def test_a_header_is_a_venue_only_when_it_reads_as_one(header, expected):
    assert venue(header) == expected


def test_bibtex_of_untitled_abstracts_has_whole_phrase_titles_and_no_foreign_header_as_venue(tmp_path):
    papers, _ = load_papers([FIXTURES / "mini_zh.txt", FIXTURES / "mini.txt"])
    bib = to_bibtex(papers)
    assert "论文" not in bib and "howpublished = {ICLR 2026}" in bib
    assert "howpublished = {ICLR 2026 Papers}" in bib
    titles = re.findall(r"title = \{\{(.*)\}\}", bib)
    assert len(titles) == len(papers)
    for title in titles:
        assert not title.endswith(("…", " by", " of", " the", " and", " to")), title
    # the cut first sentence the issue quotes no longer appears as a title
    odd = tmp_path / "merge.txt"
    odd.write_text("notes for my survey, to read later\n\nCombining diverse foundation models is promising, but "
                   "weight-merging is limited by mismatched architectures and closed APIs. Our method routes "
                   "queries instead.\n")
    entry = to_bibtex(load_papers([odd])[0])
    assert "title = {{Combining diverse foundation models}}" in entry and "howpublished" not in entry


# --- saved files are as inert as what is printed ------------------------------------------------------------

import json  # noqa: E402
import tempfile  # noqa: E402
import unicodedata  # noqa: E402
from pathlib import Path  # noqa: E402

from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from assistant.config import Settings  # noqa: E402
from assistant.qa.answer import Answer, Citation  # noqa: E402
from assistant.qa.export import _TEX_SPECIAL, save  # noqa: E402
from assistant.text.corpus import Paper  # noqa: E402
from assistant.text.safetext import for_terminal  # noqa: E402

#: What a terminal acts on or a reader cannot see: C0 but newline and tab, DEL, C1 (0x9B is a one-byte CSI),
#: bidi overrides and isolates, zero-width characters, BOM, soft hyphen, Unicode tags, separators, surrogates.
HOSTILE = ([chr(c) for c in range(0x20) if chr(c) not in "\n\t"] + [chr(c) for c in range(0x7F, 0xA0)]
           + [chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)]
           + ["\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u2028", "\u2029", "\U000e0041", "\ud800"])
SEQUENCES = ["\x1b[2J\x1b[H", "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\", "\x1b]0;title\x07", "\x9b31m",
             "\u202eevil\u202c", "zero\u200bwidth", "\n", "}", "{", "\\", "}}\n@misc{x,", "%", "~^&$#_"]
hostile = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(HOSTILE), st.sampled_from(SEQUENCES)),
                   max_size=10).map("".join)


def raw(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on or a reader could not see."""
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"}]


def bib_entries(text: str) -> list[dict[str, str]]:
    """Parse BibTeX as BibTeX does: a braced field ends at its matching brace, every brace counted (a
    backslash escapes none). Fails on anything that is not ``@misc{key,`` and ``name = {value}`` fields."""
    entries, at = [], 0
    while True:
        at = text.find("@misc{", at)
        if at < 0:
            return entries
        at = text.index(",", at)
        fields: dict[str, str] = {}
        while True:
            rest = text[at + 1:]
            stripped = rest.lstrip()
            at += 1 + len(rest) - len(stripped)
            if text[at] == "}":
                entries.append(fields)
                break
            name, _, _ = text[at:].partition(" = {")
            assert name.isalpha(), text[at:at + 40]
            at += len(name) + 4
            depth, start = 1, at
            while depth:
                assert at < len(text), "a field that never ends"
                depth += {"{": 1, "}": -1}.get(text[at], 0)
                at += 1
            fields[name] = text[start:at - 1]
            assert text[at] in ",\n", text[at:at + 20]
            if text[at] == "\n":
                at -= 1


def unescape(field: str) -> str:
    for char, spelled in _TEX_SPECIAL.items():
        field = field.replace(spelled, char)
    return field


@given(question=hostile, text=hostile, title=hostile, snippet=hostile, author=hostile, url=hostile, pid=hostile)
@hsettings(max_examples=100, deadline=None)
def test_saved_markdown_and_bibtex_are_inert_and_json_keeps_the_exact_text(question, text, title, snippet, author,
                                                                           url, pid):
    pid = "p" + pid
    paper = Paper(id=pid, title="T" + title, abstract=snippet or "x", source="s.txt", position=0, authors=(author, "B"),
                  url="https://example.org/" + url, date="2025-01-01", extra={"collection": "ICLR 2026 Papers"})
    cite = Citation(n=1, paper_id=pid, title="T" + title, snippet=snippet, score=0.5)
    answer = Answer(question=question, text=text, mode="llm", answerable=True, citations=[cite])
    other = Answer(question="q", text="t", mode="llm", answerable=True, quoted="Q" + text, quoted_citations=[cite])
    with tempfile.TemporaryDirectory() as tmp:
        written = {}
        for ext in ("md", "bib", "json"):
            path = Path(tmp) / f"out.{ext}"
            save(path, [answer, other], {pid: paper}, Settings(index_dir=Path(tmp) / "idx"))
            written[ext] = path.read_text(encoding="utf-8")
    for ext, content in written.items():
        assert raw(content) == [], ext  # `cat out.md` cannot drive the terminal
    md = [line.rstrip() for line in written["md"].splitlines()]
    # every one-line field stays on its line: a heading, a numbered source and its quote
    # Markdown holds what the terminal shows, with no HTML a viewer would render (markdown_inert)
    assert f"## {markdown_inert(question, one_line=True)}".rstrip() in md
    code_id = for_terminal(pid, one_line=True).replace("`", "'")
    assert md.count(f"1. `{code_id}`: {markdown_inert('T' + title, one_line=True)}".rstrip()) == 2
    assert md.count(f"   > {markdown_inert(snippet, one_line=True)}".rstrip()) == 2
    assert markdown_inert(text) in written["md"]
    # BibTeX reads one entry with exactly its fields, each the inert text (braces balanced whatever the text)
    (entry,) = bib_entries(written["bib"])
    assert set(entry) == {"title", "author", "year", "url", "howpublished", "note"}
    assert unescape(entry["title"]) == "{" + for_terminal("T" + title, one_line=True) + "}"
    assert unescape(entry["author"]) == for_terminal(f"{author} and B", one_line=True)
    assert unescape(entry["note"]) == for_terminal(f"assistant id {pid}", one_line=True)
    assert entry["url"].isascii() and not set(entry["url"]) & set("{}\\ ")
    # JSON keeps every string exactly, the hostile characters as escapes
    turns = json.loads(written["json"])["turns"]
    assert turns[0]["question"] == question and turns[0]["answer"] == text
    assert turns[0]["citations"][0]["title"] == "T" + title and turns[0]["citations"][0]["snippet"] == snippet
    assert turns[1]["quoted"]["text"] == "Q" + text


HOSTILE_RECORDS = [
    {"id": "evil1", "title": "Clear\x1b[2J\x1b[H the screen \u202eevil\u202c {unbalanced title",
     "abstract": "Federated learning security with \x1b]8;;http://evil.example\x1b\\hidden links\x1b]8;;\x1b\\ and "
                 "zero\u200bwidth joiners. Federated learning security is improved by \x9b31m robust clients.",
     "url": "https://example.org/a b}{", "authors": ["A\u2066lice", "Bob}"]},
]


def test_ask_save_writes_inert_markdown_and_bibtex_and_exact_json(tmp_path):
    from assistant.cli.app import app
    from assistant.store.ingest import ingest
    from assistant.text.corpus import load_papers

    source = tmp_path / "evil.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in HOSTILE_RECORDS) + "\n", encoding="utf-8")
    papers, _ = load_papers([FIXTURES / "mini_zh.txt", source])
    ingest(papers, Settings(index_dir=tmp_path / "idx"))
    runner = CliRunner()
    for ext in ("md", "bib", "json"):
        res = runner.invoke(app, ["ask", "federated learning security with robust clients", "--save",
                                  str(tmp_path / f"a.{ext}"), "--index-dir", str(tmp_path / "idx")],
                            catch_exceptions=False)
        assert res.exit_code == 0, res.output
    md, bib = (tmp_path / "a.md").read_text(), (tmp_path / "a.bib").read_text()
    assert "evil1" in md and "␛[2J" in md and raw(md) == []
    assert raw(bib) == [] and "\\textbraceleft{}unbalanced" in bib
    entry = next(e for e in bib_entries(bib) if "evil1" in e["note"])
    assert entry["url"] == "https://example.org/a%20b%7D%7B"
    saved = json.loads((tmp_path / "a.json").read_text())
    assert "\x9b31m" in saved["turns"][0]["answer"] and raw((tmp_path / "a.json").read_text()) == []
    assert any(c["title"] == HOSTILE_RECORDS[0]["title"] for c in saved["turns"][0]["citations"])


def test_a_saved_answer_keeps_the_note_that_the_corpus_may_lack_its_topic():
    from assistant.prompts import UNSURE_NOTE
    from assistant.qa.answer import Answer
    from assistant.qa.export import to_markdown

    unsure = Answer(question="federated unlearning", text="- Clients train jointly. [1]", mode="extractive",
                    answerable=True, unsure=True)
    md = to_markdown([unsure, Answer(question="federated learning", text="- FL. [1]", mode="extractive",
                                     answerable=True)])
    assert md.count(UNSURE_NOTE) == 1 and md.index(UNSURE_NOTE) < md.index("Clients train jointly")


def test_a_save_that_fails_on_a_full_disk_leaves_no_file_and_the_retry_works(mini_index, tmp_path):
    """Issue 47 row 13: `--save` on a full disk left a 0-byte file, which then blocked the retry ("already
    exists"). The full disk is a small tmpfs filled to its last page (mount needs root: skipped otherwise)."""
    import os
    import subprocess

    from typer.testing import CliRunner

    from assistant.cli.app import app

    mount = tmp_path / "mnt"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount here (needs root): {mounted.stderr.strip()}")
    runner = CliRunner()
    try:
        target = mount / "answer.json"
        filler = mount / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:  # every page taken
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        args = ["ask", "What is Mixture-of-Thought?", "--save", str(target), "--index-dir", str(mini_index)]
        res = runner.invoke(app, args)
        assert res.exit_code != 0 and "No space left" in " ".join(res.output.split())
        assert sorted(p.name for p in mount.iterdir()) == ["filler"]  # no empty answer.json, no temp file
        filler.unlink()
        res = runner.invoke(app, args)
        assert res.exit_code == 0 and json.loads(target.read_text())["turns"]
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_bibtex_key_is_made_from_the_title_every_command_shows(bundled_index_dir):
    """An untitled abstract's stored title is its first sentence (ContextBench's names the prior work it builds on,
    EPO); its key, like its title field, reads the derived title shown everywhere else."""
    from assistant.config import Settings
    from assistant.service.api import get_paper

    paper = get_paper("000_c647aebf503422f2#11", Settings(index_dir=bundled_index_dir))
    assert paper.display_title.startswith("ContextBench")
    assert to_bibtex([paper]).startswith("@misc{contextbench2026_")


def test_a_saved_transcript_keeps_the_notes_shown_under_an_llm_answer():
    """/save x.md kept "[9?]" but dropped the note saying what it means and the "Check these claims" warnings,
    which only .json held."""
    from assistant.qa.answer import Answer
    from assistant.qa.export import to_markdown

    answer = Answer(question="q", text="FL is private [1]. It is claimed in [9?].", mode="llm", answerable=True,
                    invalid_citations=[9], support=[{"sentence": "FL is private [1].", "supported": True},
                                                    {"sentence": "It is claimed in [9?].", "supported": False}])
    md = to_markdown([answer])
    assert "*Note: [9] in the answer matches no source it was given: it is marked [9?] and cites nothing.*" in md
    assert "Check these claims" in md and md.count("⚠") == 1 and "It is claimed in" in md.split("⚠")[1]
