"""Exports of answers: a Markdown transcript, BibTeX for cited papers, a JSON evidence record."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from .answer import Answer
from .config import Settings
from .corpus import Paper
from .errors import InputError

FORMATS = {".md": "markdown", ".markdown": "markdown", ".bib": "bibtex", ".json": "json"}


def to_markdown(answers: list[Answer]) -> str:
    parts = ["# assistant transcript", ""]
    for a in answers:
        parts += [f"## {a.question}", ""]
        if a.mode == "extractive" and a.answerable:
            parts += ["*Extractive answer (no LLM configured): verbatim sentences from the abstracts.*", ""]
        parts += [a.text, ""]
        if a.quoted:  # an LLM answer that cited none of its sources: as the terminal shows it
            parts += ["*The model cited none of its sources: nothing above is checked against an abstract.*", "",
                      "**What the sources say, quoted without the model**", "", a.quoted, ""]
        if a.citations or a.quoted_citations:
            parts += ["**Sources**", ""]
            for c in a.citations or a.quoted_citations:
                parts.append(f"{c.n}. `{c.paper_id}`: {c.title}  ")
                parts.append(f"   > {c.snippet}")
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def _bib_escape(text: str) -> str:
    return re.sub(r"([&%$#_{}])", r"\\\1", text.replace("\\", " ")).replace("~", r"\~{}")


def bib_key(paper: Paper, year: str | None) -> str:
    first = (paper.authors[0].split()[-1] if paper.authors else paper.title.split()[0] if paper.title else "paper")
    first = re.sub(r"[^A-Za-z0-9]", "", first).lower() or "paper"
    suffix = re.sub(r"[^A-Za-z0-9]", "", paper.id)[-8:]
    return f"{first}{year or ''}_{suffix}"


def paper_year(paper: Paper) -> str | None:
    for text in (paper.date or "", str(paper.extra.get("collection", ""))):
        m = re.search(r"\b(19|20)\d{2}\b", text)
        if m:
            return m.group(0)
    return None


def to_bibtex(papers: list[Paper]) -> str:
    entries = []
    seen = set()
    for p in papers:
        if p.id in seen:
            continue
        seen.add(p.id)
        year = paper_year(p)
        fields = [("title", "{" + _bib_escape(p.title.rstrip("…")) + "}")]
        if p.authors:
            fields.append(("author", _bib_escape(" and ".join(p.authors))))
        if year:
            fields.append(("year", year))
        if p.url:
            fields.append(("url", p.url))
        venue = p.extra.get("collection")
        if venue:
            fields.append(("howpublished", _bib_escape(str(venue))))
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
        text = json.dumps(evidence_record(answers, settings), ensure_ascii=False, indent=2) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return fmt
