"""Text from a corpus or a model made inert for a terminal, and quoted text made inert for citation parsing.

Abstracts, titles, URLs and LLM output are data: an ``ESC [2J`` in a title must not clear the user's screen,
an OSC 8 sequence must not hide a link, a right-to-left override must not reorder what is read, and a ``[7]``
inside a quoted abstract must not pass for one of our citations. Everything here is pure and cheap (no rich).
"""

from __future__ import annotations

import json
import re
import unicodedata

#: C0 controls and DEL as their Unicode "control pictures" (ESC -> ␛): visible, one cell wide, and a reader
#: sees that something was there. Newline and tab are layout and stay (unless ``one_line``).
_C0_PICTURES = {c: chr(0x2400 + c) for c in range(0x20)} | {0x7F: "\u2421"}

#: What a terminal or a reader could be fooled by: controls (Cc), invisible format characters (Cf: bidi
#: overrides and isolates U+202A-202E/U+2066-2069, zero-width space/joiners, word joiner, BOM, soft hyphen,
#: Unicode tag characters), lone surrogates (Cs: not even encodable as UTF-8), line/paragraph separators.
_UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}
#: Candidates for a closer look: anything but printable ASCII and the space (most text is ASCII, so cheap).
_NOT_PLAIN = re.compile(r"[^\x20-\x7e]")


def _visible(ch: str, one_line: bool) -> str:
    code = ord(ch)
    if ch in "\n\t":
        return " " if one_line else ch
    if code in _C0_PICTURES:
        return _C0_PICTURES[code]
    if 0x80 <= code <= 0x9F:  # C1 controls (0x9B is a one-byte CSI): no pictures exist, so spelled out
        return f"\\x{code:02x}"
    category = unicodedata.category(ch)
    if category == "Cs":
        return "\ufffd"
    if category in ("Zl", "Zp"):
        return " " if one_line else "\n"
    return ""  # Cf: invisible by nature; dropping it shows the text as it reads without the trick


def for_terminal(text: object, one_line: bool = False) -> str:
    """``text`` safe to print: C0/C1 controls shown visibly (ESC as ␛, so ``\\x1b[2J`` prints as ``␛[2J``
    and an OSC 8 hyperlink as its visible bytes), bidi overrides and zero-width characters dropped, lone
    surrogates as U+FFFD. Newlines and tabs stay unless ``one_line`` (then spaces). Anything but a str is
    str()-ed first."""
    text = text if isinstance(text, str) else str(text)

    def fix(m: re.Match) -> str:
        ch = m.group(0)
        if ch in "\n\t" or unicodedata.category(ch) in _UNSAFE_CATEGORIES:
            return _visible(ch, one_line)
        return ch

    return _NOT_PLAIN.sub(fix, text)


def json_for_terminal(data, indent: int | None = 2) -> str:
    """JSON with every character that :func:`for_terminal` would change written as a ``\\uXXXX`` escape.
    ``json.dumps(ensure_ascii=False)`` escapes C0 controls only: C1 controls, bidi overrides and zero-width
    characters went out raw, and a lone surrogate made the write fail. The escapes decode to the same text."""
    text = json.dumps(data, ensure_ascii=False, indent=indent)

    def escape(m: re.Match) -> str:
        code = ord(m.group(0))
        if m.group(0) == "\n" or unicodedata.category(m.group(0)) not in _UNSAFE_CATEGORIES:
            return m.group(0)
        if code > 0xFFFF:  # as a surrogate pair, the way JSON spells characters beyond the BMP
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\u{code:04x}"

    # outside strings JSON is ASCII punctuation, digits and whitespace, so every match is inside a string
    return _NOT_PLAIN.sub(escape, text)


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    at = cut.rfind(" ")
    if at >= limit // 2:  # a boundary not too far back; one 300-character "word" is cut where it must be
        cut = cut[:at]
    return cut.rstrip(" ,;:-–") + "…"


#: A bracketed number, list or range: what an answer's citation looks like (``[7]``, ``[1, 2]``, ``[1-3]``).
CITATION_LIKE = re.compile(r"\[\s*(-?\d+(?:\s*[-–,;]\s*-?\d+)*)\s*\]")


def inert_citations(text: str) -> str:
    """Quoted abstract text whose own reference markers cannot pass for our citations: ``[7]`` -> ``(7)``,
    ``[1, 2]`` -> ``(1, 2)``. For a sentence an extractive answer quotes before appending its ``[n]``."""
    return CITATION_LIKE.sub(lambda m: f"({m.group(1)})", text)


#: A character UTF-8 writes in several bytes: bytes holding one are UTF-8 (a bad byte among them is damage, not
#: another encoding).
UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def text_of(raw: bytes) -> str:
    """Bytes a user typed or piped, as text: UTF-8; else, when no character in them is UTF-8's, Windows-1252 (a
    Latin-1 terminal, a file saved by a Windows editor); bytes that are neither are shown as U+FFFD."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8" if UTF8_MULTIBYTE.search(raw) else "cp1252", errors="replace")


def typed(text: str) -> str:
    """A command-line argument as text: bytes that were not UTF-8 reach Python as lone surrogates (U+DC80-U+DCFF),
    which every later step refused with a traceback ("What is N\\xfcwa?" typed in a Latin-1 terminal)."""
    if not any("\udc80" <= ch <= "\udcff" for ch in text):
        return text
    return text_of(text.encode("utf-8", "surrogateescape"))
