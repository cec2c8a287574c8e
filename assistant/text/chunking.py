"""Sentence-aligned chunking in the embedder's own tokens, without importing llama-index or nltk.

The chunks are the ones llama-index's ``SentenceSplitter`` makes (the splitter the project started
with, and with which every retrieval figure in the README was measured): the same split order
(paragraphs, sentences, phrases, words, characters), the same greedy packing with sentence overlap.
Its sentence step is nltk's *untrained* Punkt tokenizer; :func:`split_sentences` reproduces that
tokenizer's decisions (no abbreviation list, no orthographic statistics), which reduce to a few
rules. What this buys: ``import nltk`` pulls in scipy.stats and costs ~4 s, llama-index's node
parser another ~3 s, paid by every ``assistant ingest`` however small.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Callable

# --- nltk (3.10) Punkt with empty parameters (nltk/tokenize/punkt.py, PunktLanguageVars) -------
_NON_WORD = r"(?:[)\";}\]\*:@\'\({\[\u2018\u2019\u201c\u201d\xab\xbb!?])"
_MULTI_CHAR = r"(?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)"
_WORD_START = r"[^\(\"\`{\[:;&\#\*@\)}\]\-,]"
_WORD_RE = re.compile(
    rf"""(
        {_MULTI_CHAR}
        |
        (?={_WORD_START})\S+?
        (?=
            \s|$|{_NON_WORD}|{_MULTI_CHAR}|,(?=$|\s|{_NON_WORD}|{_MULTI_CHAR})
        )
        |
        \S
    )""",
    re.UNICODE | re.VERBOSE,
)
_PERIOD_CONTEXT_RE = re.compile(
    rf"""[.?!](?=(?P<after_tok>{_NON_WORD}|\s+(?P<next_tok>\S+)))""", re.UNICODE | re.VERBOSE)
_REALIGN_RE = re.compile(r'["\')\]}\u2018\u2019\u201c\u201d\xab\xbb]+?(?:\s+|(?=--)|$)', re.MULTILINE)
_NUMBER_RE = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
_INITIAL_RE = re.compile(r"[^\W\d]\.$")
_ELLIPSIS_RE = re.compile(r"\.\.+$")


def _is_number(tok: str) -> bool:
    typ = _NUMBER_RE.sub("##number##", tok.lower())
    if len(typ) > 1 and typ.endswith("."):
        typ = typ[:-1]
    return typ == "##number##"


def _breaks(tokens: list[str]) -> list[bool]:
    """Punkt's two annotation passes with no learned abbreviations, collocations or casing."""
    brk = []
    for tok in tokens:
        if tok in (".", "?", "!"):
            brk.append(True)
        elif _ELLIPSIS_RE.match(tok):
            brk.append(False)
        else:
            brk.append(tok.endswith(".") and not tok.endswith(".."))
    for i in range(len(tokens) - 1):
        tok, nxt = tokens[i], tokens[i + 1]
        if not tok.endswith("."):  # most tokens: skip the regex below
            continue
        initial = bool(_INITIAL_RE.match(tok))
        if not (initial or _is_number(tok)):
            continue
        # the orthographic heuristic with no statistics: a lowercase word or punctuation after
        # an initial or a number means "not a sentence start"; a capital after an initial, too.
        if nxt in (";", ":", ",", ".", "!", "?") or nxt[0].islower() or (initial and nxt[0].isupper()):
            brk[i] = False
    return brk


def _contains_break(context: str) -> bool:
    tokens = [t for line in context.split("\n") if line.strip() for t in _WORD_RE.findall(line)]
    brk = _breaks(tokens)
    return any(brk[i] for i in range(len(tokens) - 1))


def _end_contexts(text: str):
    """Each candidate sentence end with the word before it and the token after it."""
    prev_slice = slice(0, 0)
    prev_match = None
    for match in _PERIOD_CONTEXT_RE.finditer(text):
        before = text[prev_slice.stop:match.start()]
        last_space = next((i for i in range(len(before) - 1, -1, -1) if before[i] in string.whitespace), 0)
        # (as in nltk: whitespace at index 0 counts as none, so the word runs on from the last one)
        start = last_space + prev_slice.stop + 1 if last_space else prev_slice.start
        word = slice(start, match.start())
        if prev_match and prev_slice.stop <= word.start:
            yield prev_match, text[prev_slice] + prev_match.group() + prev_match.group("after_tok")
        prev_match, prev_slice = match, word
    if prev_match:
        yield prev_match, text[prev_slice] + prev_match.group() + prev_match.group("after_tok")


def _sentence_starts(text: str) -> list[int]:
    slices = []
    last = 0
    for match, context in _end_contexts(text):
        if _contains_break(context):
            slices.append((last, match.end()))
            last = match.start("next_tok") if match.group("next_tok") else match.end()
    slices.append((last, len(text.rstrip())))
    starts = []
    realign = 0
    for i, (start, stop) in enumerate(slices):
        start += realign
        if i + 1 == len(slices):
            if text[start:stop]:
                starts.append(start)
            continue
        m = _REALIGN_RE.match(text[slices[i + 1][0]:slices[i + 1][1]])
        if m:
            starts.append(start)
            realign = m.end()
        else:
            realign = 0
            if text[start:stop]:
                starts.append(start)
    return starts


def split_sentences(text: str) -> list[str]:
    """Sentences with their trailing whitespace, joining back to ``text``."""
    starts = _sentence_starts(text)
    return [text[s:(starts[i + 1] if i + 1 < len(starts) else len(text))] for i, s in enumerate(starts)]


# --- llama-index SentenceSplitter (node_parser/text/sentence.py): split, then greedy merge ------
_PHRASE_RE = re.compile("[^,.;。？！]+[,.;。？！]?|[,.;。？！]")
_PARAGRAPH_SEP = "\n\n\n"


def _split_keep(text: str, sep: str) -> list[str]:
    parts = text.split(sep)
    return [p for p in ((sep + s if i else s) for i, s in enumerate(parts)) if p]


@dataclass
class _Split:
    text: str
    is_sentence: bool
    tokens: int


class SentencePacker:
    """Pack whole sentences into chunks of at most ``size`` tokens, repeating up to ``overlap``
    tokens of trailing sentences at the start of the next chunk; an over-long sentence is cut at
    phrase, then word, then character boundaries."""

    def __init__(self, size: int, overlap: int, count: Callable[[str], int],
                 sentences: Callable[[str], list[str]] = split_sentences):
        if overlap > size:
            raise ValueError("chunk overlap must be smaller than the chunk size")
        self.size, self.overlap, self.count = size, overlap, count
        self._sentence_fns = [lambda t: _split_keep(t, _PARAGRAPH_SEP), sentences]
        self._phrase_fns = [_PHRASE_RE.findall, lambda t: _split_keep(t, " "), list]

    def split_text(self, text: str) -> list[str]:
        if text == "":
            return [text]
        return self._merge(self._split(text))

    def _split(self, text: str, tokens: int | None = None) -> list[_Split]:
        tokens = self.count(text) if tokens is None else tokens
        if tokens <= self.size:
            return [_Split(text, True, tokens)]
        pieces, is_sentence = self._pieces(text)
        out: list[_Split] = []
        for piece in pieces:
            tokens = self.count(piece)
            if tokens <= self.size or len(pieces) == 1:
                out.append(_Split(piece, is_sentence, tokens))
            else:
                out.extend(self._split(piece, tokens))  # already counted: tokenising is the cost here
        return out

    def _pieces(self, text: str) -> tuple[list[str], bool]:
        for fn in self._sentence_fns:
            pieces = fn(text)
            if len(pieces) > 1:
                return pieces, True
        for fn in self._phrase_fns:
            pieces = fn(text)
            if len(pieces) > 1:
                break
        return pieces, False

    def _merge(self, splits: list[_Split]) -> list[str]:
        chunks: list[str] = []
        cur: list[tuple[str, int]] = []
        cur_len = 0
        new_chunk = True

        def close() -> None:
            nonlocal cur, cur_len, new_chunk
            chunks.append("".join(t for t, _ in cur))
            last, cur, cur_len, new_chunk = cur, [], 0, True
            i = len(last) - 1
            while i >= 0 and cur_len + last[i][1] <= self.overlap:  # overlap: whole trailing pieces
                cur_len += last[i][1]
                cur.insert(0, last[i])
                i -= 1

        i = 0
        while i < len(splits):
            split = splits[i]
            if split.tokens > self.size:
                raise ValueError("a single token is longer than the chunk size")
            if cur_len + split.tokens > self.size and not new_chunk:
                close()
                continue
            if new_chunk and cur_len + split.tokens > self.size:
                while cur and cur_len + split.tokens > self.size:  # drop overlap to make room
                    cur_len -= cur.pop(0)[1]
            if split.is_sentence or cur_len + split.tokens <= self.size or new_chunk:
                cur_len += split.tokens
                cur.append((split.text, split.tokens))
                i += 1
                new_chunk = False
            else:
                close()
        if not new_chunk:
            chunks.append("".join(t for t, _ in cur))
        return [c.strip() for c in chunks if c.strip()]
