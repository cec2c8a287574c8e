"""Plain-text and Markdown lists of abstracts, as people write them: a title line (or none), then abstracts
separated by blank lines, wrapped or one a line, under Markdown headings, as bullets, or as labelled blocks
("Title: ... / Authors: ... / Abstract: ..."). What a paragraph is, read from its layout; no English is read
but the labels."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assistant.text.english import LIST_LABELS
from assistant.text.markup import without_markup

#: A list's first line is its header (a title, "ICLR 2026 Papers") when it is at most this long and reads as no
#: sentence.
HEADER_MAX = 200
#: A line this long is a paragraph written on one line, not a wrapped line of one: a paragraph of several such
#: lines is several abstracts, one a line.
UNWRAPPED_LINE = 300
#: Lines of at least this many characters that each end a sentence are abstracts one a line too: lines wrapped
#: at 70-80 columns are shorter, and seldom all end where a sentence does.
SENTENCE_LINE = 100

_PARA_SPLIT = re.compile(r"\n[ \t\r\f\v]*\n")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(?=\S)")
_ITEM = re.compile(r"^\s{0,3}(?:[-*•+]|\d{1,3}[.)])\s+(?=\S)")
#: A sentence's end: a stop, perhaps inside quotes or brackets.
_ENDS_SENTENCE = re.compile(r"[.!?][\"'”’)\]]*$")
_HAS_SENTENCE = re.compile(r"[.!?][\"'”’)\]]*\s+[A-Z]")
_LABEL = re.compile(r"^\s*(" + "|".join(LIST_LABELS) + r")\s*:\s*", re.I)
#: A word broken at a line's end by a hyphen ("high-" / "resolution"): joined without the space a line break
#: would become ("high- resolution"); the hyphen stays, as it does in "state-of-the-art".
_BROKEN_WORD = re.compile(r"(?<=[^\W\d_])-\n[ \t]*(?=[a-z])")


@dataclass
class Entry:
    """One abstract of a list, with the title and authors its layout gave it (None: derived from the text)."""

    abstract: str
    title: str | None = None
    authors: str | None = None


@dataclass
class TextList:
    header: str = ""
    entries: list[Entry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was read otherwise than the plain layout says


def read_list(text: str) -> TextList:
    """The header and abstracts of a plain-text or Markdown list."""
    text = _BROKEN_WORD.sub("-", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = text.split("\n")
    out = TextList()
    start = _header(lines, out)
    # a heading, or a title line alone in its paragraph, titles the abstract after it: (kind, text) until then
    pending: tuple[str, str] | None = None
    for number, para in enumerate(_PARA_SPLIT.split("\n".join(lines[start:])), 1):
        for kind, value in _blocks(para, number, out):
            if kind in ("heading", "line"):
                _unclaimed(pending, out)
                pending = (kind, value)
                continue
            entry = value if isinstance(value, Entry) else Entry(value)
            if entry.title is None and pending is not None:
                entry.title = pending[1]
            pending = None
            out.entries.append(entry)
    _unclaimed(pending, out)
    return out


def _unclaimed(pending: tuple[str, str] | None, out: TextList) -> None:
    """A title no abstract followed: a heading is skipped (said); a plain short line is an abstract after all (a
    list of one-line abstracts without a full stop reads as titles)."""
    if pending is None:
        return
    kind, text = pending
    if kind == "heading":
        out.notes.append(f"{text!r} has no abstract under it; skipped")
    else:
        out.entries.append(Entry(text))


def _header(lines: list[str], out: TextList) -> int:
    """Read the list's header into ``out``; the index of the first line after it."""
    first = lines[0].strip() if lines else ""
    if not first:
        return 1 if lines else 0
    level = _HEADING.match(first)
    if level:  # "# Reading list" names the list; "## FooNet: ..." titles its first abstract
        if len(level.group(1)) > 1:
            return 0
        out.header = _HEADING.sub("", first)[:HEADER_MAX]
        return 1
    after = lines[1] if len(lines) > 1 else ""
    plain = without_markup(first).strip()
    wrapped = after.strip() and re.search(r"[a-z,;:\-–]$", plain) and re.match(r"\s*[a-z(]", after)
    if len(plain) > HEADER_MAX or _prose(plain) or _ITEM.match(first) or _LABEL.match(first) or wrapped:
        out.notes.append("its first line reads as an abstract, not as the list's header line: read as the first "
                         "abstract (put a title line first, e.g. \"My reading list\", to silence this)")
        return 0
    out.header = plain
    end = 1
    # lines right under it that are no sentence either ("Compiled by J. Doe, March 2024") are the header's too
    while end < len(lines) and lines[end].strip() and not _prose(lines[end].strip()) \
            and len(lines[end].strip()) <= HEADER_MAX and not _HEADING.match(lines[end]) \
            and not _LABEL.match(lines[end]) and not _ITEM.match(lines[end]) and _next_is_blank(lines, end):
        end += 1
    return end


def _next_is_blank(lines: list[str], i: int) -> bool:
    return i + 1 >= len(lines) or not lines[i + 1].strip() or not _prose(" ".join(lines[i + 1:i + 3]))


def _prose(line: str) -> bool:
    """Whether a line holds a sentence: it ends one, or one ends inside it."""
    return bool(_ENDS_SENTENCE.search(line) or _HAS_SENTENCE.search(line))


def _blocks(para: str, number: int, out: TextList):
    """("heading" or "line", a title) and ("abstract", text or Entry) pieces of one blank-line-separated
    paragraph."""
    lines = [line for line in para.split("\n") if line.strip()]
    if not lines:
        return
    if _LABEL.match(lines[0]):
        yield "abstract", _labelled(lines)
        return
    group: list[str] = []
    for line in lines:  # a heading line starts a block of its own, blank line or not
        if _HEADING.match(line):
            yield from _plain(group, number, out)
            group = []
            yield "heading", _HEADING.sub("", line).strip()
        else:
            group.append(line)
    yield from _plain(group, number, out)


def _plain(lines: list[str], number: int, out: TextList):
    if not lines:
        return
    if _ITEM.match(lines[0]):  # a bulleted or numbered list: one abstract an item, continuation lines joined
        items: list[list[str]] = []
        for line in lines:
            if _ITEM.match(line) or not items:
                items.append([_ITEM.sub("", line)])
            else:
                items[-1].append(line)
        for item in items:
            yield "abstract", " ".join(" ".join(item).split())
        return
    stripped = [without_markup(line).strip() for line in lines]
    if len(lines) > 1 and (all(len(s) >= UNWRAPPED_LINE for s in stripped) or all(
            len(s) >= SENTENCE_LINE and _ENDS_SENTENCE.search(s) for s in stripped)):
        out.notes.append(f"paragraph {number} holds {len(lines)} lines that are each an abstract: read as "
                         f"{len(lines)} abstracts, one a line (separate abstracts by a blank line)")
        for line in lines:
            yield "abstract", " ".join(line.split())
        return
    joined = " ".join(" ".join(lines).split())
    if len(lines) == 1 and len(stripped[0]) <= HEADER_MAX and not _prose(stripped[0]):
        yield "line", joined  # "FooNet: Conv Nets for Tables", then its abstract after a blank line
        return
    yield "abstract", joined


def _labelled(lines: list[str]) -> Entry:
    """A block of "Label: value" lines (Title, Authors, Abstract; a line without a label goes on the one before)."""
    fields: dict[str, list[str]] = {}
    current = None
    for line in lines:
        m = _LABEL.match(line)
        if m:
            current = m.group(1).lower()
            fields.setdefault(current, []).append(line[m.end():])
        elif current is not None:
            fields[current].append(line)
    text = {k: " ".join(" ".join(v).split()) for k, v in fields.items()}
    abstract = text.get("abstract") or text.get("summary") or " ".join(" ".join(lines).split())
    return Entry(abstract, title=text.get("title") or None, authors=text.get("authors") or text.get("author") or None)
