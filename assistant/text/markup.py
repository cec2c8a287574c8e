"""HTML in exported abstracts (Crossref's ``<jats:p>``, PubMed's ``<i>``, entities such as ``&amp;``): read as
the text it marks, so that titles, snippets, search terms and summaries hold no tag and no entity."""

from __future__ import annotations

import html
import re

#: Tags that format text and say nothing of it: paragraphs and line breaks (read as a space), inline emphasis,
#: sub- and superscripts, links (their text kept), lists, and any JATS or MathML element. A tag an abstract writes
#: as a word ("the <think> token") is none of these, and stays.
_BREAKING = re.compile(r"</?(?:p|br|div|li|ul|ol|jats:p|jats:sec|jats:title|jats:list-item)(?:\s[^<>]*)?/?>", re.I)
_INLINE = re.compile(r"</?(?:b|i|em|strong|u|sup|sub|span|a|small|sc|italic|bold|tt|(?:jats|mml):[\w.-]+)"
                     r"(?:\s[^<>]*)?/?>", re.I)
#: A well-formed character reference: named (``&amp;``), decimal (``&#8211;``) or hexadecimal (``&#x2013;``).
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


#: A closing formatting tag: the sign that a text is marked up, not about markup ("we parse <div class=x> and
#: <br> tags" keeps its words).
_CLOSING = re.compile(r"</(?:p|div|li|ul|ol|b|i|em|strong|u|sup|sub|span|a|small|sc|italic|bold|tt|"
                      r"(?:jats|mml):[\w.-]+)\s*>", re.I)


def without_markup(text: str) -> str:
    """``text`` with its formatting tags dropped, when it is marked up (it closes one), and its character references
    read ("&lt;attention&gt;" -> "<attention>"): tags first, so that a tag written as an entity stays text."""
    if "<" in text and _CLOSING.search(text):
        text = _INLINE.sub("", _BREAKING.sub(" ", text))
    if "&" in text:
        text = _ENTITY.sub(lambda m: html.unescape(m.group()), text)
    return text
