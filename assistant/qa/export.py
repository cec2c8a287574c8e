"""Exports of answers: a Markdown transcript, BibTeX for cited papers, a JSON evidence record.

What is written is as inert as what is printed (docs/faults.md): a user who ``cat``s a saved file must not
have their terminal driven by an abstract or a model. Markdown and BibTeX hold the text as the terminal
shows it (:func:`~assistant.text.safetext.for_terminal`: ESC as ␛, C1 controls spelled out, bidi overrides
and zero-width characters dropped); JSON keeps every string exactly, with those characters as escapes."""

from __future__ import annotations

import re
import time
from pathlib import Path

from assistant.qa.answer import Answer
from assistant.config import Settings
from assistant.text.corpus import Paper
from assistant.errors import AssistantError, InputError
from assistant.prompts import CHECK_CLAIMS, UNSURE_NOTE, invalid_citations_note
from assistant.text.safetext import for_terminal, json_for_terminal
from assistant.text.english import VENUE_SIGN

FORMATS = {".md": "markdown", ".markdown": "markdown", ".bib": "bibtex", ".json": "json"}


def markdown_inert(text: str, one_line: bool = False) -> str:
    """Text as the terminal shows it, made literal Markdown: its LaTeX as plain Unicode (``\\textbf{X}`` -> X,
    ``86.2\\%`` -> 86.2%, as :func:`~assistant.text.latex.readable` does for the terminal), inert for a terminal
    (:func:`for_terminal`), no HTML a viewer would render or run (``<script>`` as ``&lt;script&gt;``), and no link
    a viewer would follow (``[x](javascript:...)``: the ``](`` is escaped). Citation markers ``[n]`` stay as they
    are. (``.json`` keeps every string verbatim.)"""
    from assistant.text.latex import readable

    text = for_terminal(readable(text), one_line=one_line).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("](", "]\\(")


def to_markdown(answers: list[Answer]) -> str:
    def line(text: str) -> str:  # a heading, a list item, a quote: one line, so its text cannot end it
        return markdown_inert(text, one_line=True)

    def code(text: str) -> str:  # inside backticks nothing is rendered; a backtick in it would end the span
        return for_terminal(text, one_line=True).replace("`", "'")

    parts = ["# assistant transcript", ""]
    for a in answers:
        parts += [f"## {line(a.question)}", ""]
        if a.unsure:
            parts += [f"*{UNSURE_NOTE}*", ""]
        if a.mode == "extractive" and a.answerable:
            parts += ["*Extractive answer (no LLM configured): verbatim sentences from the abstracts.*", ""]
        parts += [markdown_inert(a.text), ""]
        if a.invalid_citations:  # the notes the terminal shows under the answer, as it shows them
            parts += [f"*{line(invalid_citations_note(a.invalid_citations))}*", ""]
        weak = [s["sentence"] for s in a.support if not s["supported"]]
        if weak:
            parts += [f"*{CHECK_CLAIMS}:*", "", *(f"- ⚠ {line(w)}" for w in weak), ""]
        if a.quoted:  # an LLM answer that cited none of its sources: as the terminal shows it
            parts += ["*The model cited none of its sources: nothing above is checked against an abstract.*", "",
                      "**What the sources say, quoted without the model**", "", markdown_inert(a.quoted), ""]
        if a.citations or a.quoted_citations:
            parts += ["**Sources**", ""]
            for c in a.citations or a.quoted_citations:
                parts.append(f"{c.n}. `{code(c.paper_id)}`: {line(c.title)}  ")
                parts.append(f"   > {line(c.snippet)}")
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"


#: What TeX would act on in a field, spelled so it is typeset as itself. Braces included: BibTeX counts every
#: brace, even an escaped ``\{``, to find where a field ends, so one unbalanced brace in a title swallowed the
#: rest of the file; ``\textbraceleft{}`` is balanced whatever the text holds.
_TEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\textbraceleft{}", "}": r"\textbraceright{}",
                "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "&": r"\&", "%": r"\%", "$": r"\$",
                "#": r"\#", "_": r"\_"}


def _bib_escape(text: str) -> str:
    """A field's text, one line, inert (:func:`for_terminal`) and with TeX's special characters as themselves."""
    return re.sub(r"[\\{}~^&%$#_]", lambda m: _TEX_SPECIAL[m.group(0)], for_terminal(text, one_line=True))


#: The schemes a saved URL may have: a web or FTP address (``javascript:``, ``data:``, ``file:`` and the like run or
#: open something when followed, and are not written).
WEB_SCHEMES = ("http", "https", "ftp", "ftps")


def web_url(url: str | None) -> str | None:
    """``url`` when it is a web address (a scheme of :data:`WEB_SCHEMES`, or none: ``arxiv.org/abs/...``), else
    None."""
    text = for_terminal(url or "", one_line=True).strip()
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*):", text)
    if not text or (scheme and scheme.group(1).lower() not in WEB_SCHEMES):
        return None
    return text


def _bib_url(url: str) -> str:
    """A URL as a field: inert, and what is not ASCII or would end the field (braces, a backslash, a space)
    percent-encoded, so it still leads where it did."""
    from urllib.parse import quote

    return quote(for_terminal(url, one_line=True).strip(), safe=":/?#[]@!$&'()*+,;=%-._~")


def bib_key(paper: Paper, year: str | None) -> str:
    words = (paper.authors[0] if paper.authors else paper.display_title).split()  # the title every command shows
    first = (words[-1] if paper.authors else words[0]) if words else "paper"
    first = re.sub(r"[^A-Za-z0-9]", "", first).lower() or "paper"
    suffix = re.sub(r"[^A-Za-z0-9]", "", paper.id)[-8:]
    return f"{first}{year or ''}_{suffix}"


def paper_year(paper: Paper) -> str | None:
    for text in (paper.date or "", str(paper.extra.get("collection", ""))):
        m = re.search(r"\b(19|20)\d{2}\b", text)
        if m:
            return m.group(0)
    return None


def _latin(ch: str) -> bool:
    import unicodedata

    return ch.isascii() or "LATIN" in unicodedata.name(ch, "")


def venue(header: str) -> str | None:
    """A text file's header line as a venue (BibTeX ``howpublished``), only when it reads as one: a short
    Latin-script name, no sentence (``ICLR 2026 Papers``). A header in another script keeps its Latin-script
    start when that names a venue and a year (``ICLR 2026 论文列表`` -> ``ICLR 2026``); anything else: None."""
    header = " ".join(str(header).split())

    def reads_as_venue(text: str) -> bool:
        words = text.split()
        return (0 < len(words) <= 12 and len(text) <= 100 and all(_latin(c) for c in text)
                and not re.search(r"[.!?;:]$|[.!?]\s", text) and bool(re.match(r"[A-Z]|[a-z]+[A-Z]", words[0]))
                and sum(1 for w in words if w[:1].islower()) <= len(words) // 2
                and bool(VENUE_SIGN.search(text)))

    if reads_as_venue(header):
        return header
    start = re.match(r"[A-Za-z0-9 .\-&']+", header)
    start = start.group().strip() if start else ""
    if start and re.search(r"\b(?:19|20)\d{2}\b", start) and re.search(r"[A-Z]{2,}|[a-z][A-Z]", start) \
            and reads_as_venue(start):
        return start
    return None


def to_bibtex(papers: list[Paper]) -> str:
    entries = []
    seen = set()
    for p in papers:
        if p.id in seen:
            continue
        seen.add(p.id)
        year = paper_year(p)
        fields = [("title", "{" + _bib_escape(p.display_title) + "}")]
        if p.authors:
            fields.append(("author", _bib_escape(" and ".join(p.authors))))
        if year:
            fields.append(("year", year))
        if web_url(p.url):  # a javascript: or data: "url" is not written
            fields.append(("url", _bib_url(web_url(p.url))))
        where = venue(p.extra.get("collection") or "")
        if where:
            fields.append(("howpublished", _bib_escape(where)))
        note = f"assistant id {p.id}"
        if p.title_derived:
            note += "; title derived from the abstract (the source lists no title)"
        fields.append(("note", _bib_escape(note)))
        body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields)
        entries.append(f"@misc{{{bib_key(p, year)},\n{body}\n}}")
    return "\n\n".join(entries) + ("\n" if entries else "")


def evidence_record(answers: list[Answer], settings: Settings) -> dict:
    """Enough to replay a run and compare it with another: question, retrieval, prompt, model, answer."""
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "settings": {k: v for k, v in settings.public().items() if k != "api_key"},
        "turns": [{
            **a.as_dict(),
            "retrieved": [{"paper_id": h.paper_id, "score": round(h.score, 4), "dense": round(h.dense, 4),
                           "bm25": round(h.bm25, 4)} for h in (a.retrieved or a.sources)],
            "prompt": a.prompt,
        } for a in answers],
    }


def check_target(path: Path, force: bool = False, flag: str = "--force") -> str:
    """The format ``path``'s extension names, or InputError: called before an answer is computed, so that a
    wrong name costs nothing. An existing file is overwritten only with ``force`` (``flag`` is how the user
    asks for it)."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"cannot save to {path.name}: use a .md, .bib or .json file name")
    if path.is_dir():
        raise InputError(f"cannot save to {path}: it is a directory")
    if path.exists() and not force:
        raise InputError(f"{path} already exists; add {flag} to overwrite it, or choose another name")
    return fmt


def save(path: Path, answers: list[Answer], papers: dict[str, Paper], settings: Settings,
         force: bool = False) -> str:
    """Write answers to ``path`` in the format its extension names; returns the format."""
    path = Path(path)
    fmt = check_target(path, force)
    if fmt == "markdown":
        text = to_markdown(answers)
    elif fmt == "bibtex":
        cited = [papers[c.paper_id] for a in answers for c in (a.citations or a.quoted_citations)
                 if c.paper_id in papers]
        text = to_bibtex(cited)
    else:
        # every string exact; controls, bidi and zero-width characters as \uXXXX escapes (a lone surrogate too)
        text = json_for_terminal(evidence_record(answers, settings)) + "\n"
    from assistant.store.files import write_atomically

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text.encode("utf-8"))  # whole or not at all: a full disk leaves no empty file
    except OSError as exc:
        # the file system said no (permissions, a full disk): exit 1, as the README's table says, not an input error
        raise AssistantError(f"cannot write {path}: {exc.strerror or exc}") from None
    return fmt
